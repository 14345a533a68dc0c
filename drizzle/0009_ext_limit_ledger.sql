CREATE TABLE `ext_limit_counting` (
	`consumer_type` text PRIMARY KEY NOT NULL
);

--> statement-breakpoint
DROP TRIGGER IF EXISTS `ext_limit_usage_allocation_insert`;
--> statement-breakpoint
DROP TRIGGER IF EXISTS `ext_limit_usage_allocation_delete`;
--> statement-breakpoint
DROP TRIGGER IF EXISTS `ext_limit_usage_allocation_update`;
--> statement-breakpoint
DROP TRIGGER IF EXISTS `ext_limit_usage_consumer_insert`;
--> statement-breakpoint
DROP TRIGGER IF EXISTS `ext_limit_usage_consumer_delete`;
--> statement-breakpoint
DROP TRIGGER IF EXISTS `ext_limit_usage_consumer_leave`;
--> statement-breakpoint
DROP TRIGGER IF EXISTS `ext_limit_usage_consumer_join`;
--> statement-breakpoint
CREATE TRIGGER ext_limit_usage_allocation_insert AFTER INSERT ON allocations WHEN EXISTS (SELECT 1 FROM ext_limit_counting) BEGIN
  INSERT INTO ext_limit_usage (project_id, resource_class_id, used)
      SELECT c.project_id, NEW.resource_class_id, +NEW.used FROM consumers c
      WHERE c.uuid = NEW.consumer_id AND ((c.consumer_type_id IS NULL AND EXISTS (SELECT 1 FROM ext_limit_counting k WHERE k.consumer_type = ''))
      OR c.consumer_type_id IN (SELECT ct.id FROM consumer_types ct JOIN ext_limit_counting k ON k.consumer_type = ct.name))
      ON CONFLICT (project_id, resource_class_id) DO UPDATE SET used = used + excluded.used;
END;
--> statement-breakpoint
CREATE TRIGGER ext_limit_usage_allocation_delete AFTER DELETE ON allocations WHEN EXISTS (SELECT 1 FROM ext_limit_counting) BEGIN
  INSERT INTO ext_limit_usage (project_id, resource_class_id, used)
      SELECT c.project_id, OLD.resource_class_id, -OLD.used FROM consumers c
      WHERE c.uuid = OLD.consumer_id AND ((c.consumer_type_id IS NULL AND EXISTS (SELECT 1 FROM ext_limit_counting k WHERE k.consumer_type = ''))
      OR c.consumer_type_id IN (SELECT ct.id FROM consumer_types ct JOIN ext_limit_counting k ON k.consumer_type = ct.name))
      ON CONFLICT (project_id, resource_class_id) DO UPDATE SET used = used + excluded.used;
END;
--> statement-breakpoint
CREATE TRIGGER ext_limit_usage_allocation_update AFTER UPDATE OF used, consumer_id, resource_class_id ON allocations WHEN EXISTS (SELECT 1 FROM ext_limit_counting) BEGIN
  INSERT INTO ext_limit_usage (project_id, resource_class_id, used)
      SELECT c.project_id, OLD.resource_class_id, -OLD.used FROM consumers c
      WHERE c.uuid = OLD.consumer_id AND ((c.consumer_type_id IS NULL AND EXISTS (SELECT 1 FROM ext_limit_counting k WHERE k.consumer_type = ''))
      OR c.consumer_type_id IN (SELECT ct.id FROM consumer_types ct JOIN ext_limit_counting k ON k.consumer_type = ct.name))
      ON CONFLICT (project_id, resource_class_id) DO UPDATE SET used = used + excluded.used;
  INSERT INTO ext_limit_usage (project_id, resource_class_id, used)
      SELECT c.project_id, NEW.resource_class_id, +NEW.used FROM consumers c
      WHERE c.uuid = NEW.consumer_id AND ((c.consumer_type_id IS NULL AND EXISTS (SELECT 1 FROM ext_limit_counting k WHERE k.consumer_type = ''))
      OR c.consumer_type_id IN (SELECT ct.id FROM consumer_types ct JOIN ext_limit_counting k ON k.consumer_type = ct.name))
      ON CONFLICT (project_id, resource_class_id) DO UPDATE SET used = used + excluded.used;
END;
--> statement-breakpoint
CREATE TRIGGER ext_limit_usage_consumer_insert AFTER INSERT ON consumers WHEN ((NEW.consumer_type_id IS NULL AND EXISTS (SELECT 1 FROM ext_limit_counting k WHERE k.consumer_type = ''))
      OR NEW.consumer_type_id IN (SELECT ct.id FROM consumer_types ct JOIN ext_limit_counting k ON k.consumer_type = ct.name)) BEGIN
  INSERT INTO ext_limit_usage (project_id, resource_class_id, used)
      SELECT NEW.project_id, a.resource_class_id, +sum(a.used) FROM allocations a
      WHERE a.consumer_id = NEW.uuid GROUP BY a.resource_class_id
      ON CONFLICT (project_id, resource_class_id) DO UPDATE SET used = used + excluded.used;
END;
--> statement-breakpoint
CREATE TRIGGER ext_limit_usage_consumer_delete AFTER DELETE ON consumers WHEN ((OLD.consumer_type_id IS NULL AND EXISTS (SELECT 1 FROM ext_limit_counting k WHERE k.consumer_type = ''))
      OR OLD.consumer_type_id IN (SELECT ct.id FROM consumer_types ct JOIN ext_limit_counting k ON k.consumer_type = ct.name)) BEGIN
  INSERT INTO ext_limit_usage (project_id, resource_class_id, used)
      SELECT OLD.project_id, a.resource_class_id, -sum(a.used) FROM allocations a
      WHERE a.consumer_id = OLD.uuid GROUP BY a.resource_class_id
      ON CONFLICT (project_id, resource_class_id) DO UPDATE SET used = used + excluded.used;
END;
--> statement-breakpoint
CREATE TRIGGER ext_limit_usage_consumer_leave AFTER UPDATE OF project_id, consumer_type_id ON consumers WHEN ((OLD.consumer_type_id IS NULL AND EXISTS (SELECT 1 FROM ext_limit_counting k WHERE k.consumer_type = ''))
      OR OLD.consumer_type_id IN (SELECT ct.id FROM consumer_types ct JOIN ext_limit_counting k ON k.consumer_type = ct.name)) BEGIN
  INSERT INTO ext_limit_usage (project_id, resource_class_id, used)
      SELECT OLD.project_id, a.resource_class_id, -sum(a.used) FROM allocations a
      WHERE a.consumer_id = OLD.uuid GROUP BY a.resource_class_id
      ON CONFLICT (project_id, resource_class_id) DO UPDATE SET used = used + excluded.used;
END;
--> statement-breakpoint
CREATE TRIGGER ext_limit_usage_consumer_join AFTER UPDATE OF project_id, consumer_type_id ON consumers WHEN ((NEW.consumer_type_id IS NULL AND EXISTS (SELECT 1 FROM ext_limit_counting k WHERE k.consumer_type = ''))
      OR NEW.consumer_type_id IN (SELECT ct.id FROM consumer_types ct JOIN ext_limit_counting k ON k.consumer_type = ct.name)) BEGIN
  INSERT INTO ext_limit_usage (project_id, resource_class_id, used)
      SELECT NEW.project_id, a.resource_class_id, +sum(a.used) FROM allocations a
      WHERE a.consumer_id = NEW.uuid GROUP BY a.resource_class_id
      ON CONFLICT (project_id, resource_class_id) DO UPDATE SET used = used + excluded.used;
END;