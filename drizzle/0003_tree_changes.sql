CREATE TABLE `placement_tree_changes` (
	`root_id` integer PRIMARY KEY NOT NULL,
	`seq` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `placement_tree_changes_seq_idx` ON `placement_tree_changes` (`seq`);
--> statement-breakpoint
-- Every write to a tree marks its root (see src/placement/candidates/cloud-model.ts).
CREATE TRIGGER `tree_change_provider_insert` AFTER INSERT ON `resource_providers` BEGIN
  INSERT INTO placement_tree_changes (root_id, seq) VALUES (COALESCE(NEW.root_provider_id, NEW.id), (SELECT COALESCE(MAX(seq), 0) + 1 FROM placement_tree_changes)) ON CONFLICT (root_id) DO UPDATE SET seq = excluded.seq;
END;
--> statement-breakpoint
CREATE TRIGGER `tree_change_provider_update` AFTER UPDATE OF uuid, root_provider_id, parent_provider_id ON `resource_providers` BEGIN
  INSERT INTO placement_tree_changes (root_id, seq) VALUES (COALESCE(OLD.root_provider_id, OLD.id), (SELECT COALESCE(MAX(seq), 0) + 1 FROM placement_tree_changes)) ON CONFLICT (root_id) DO UPDATE SET seq = excluded.seq;
  INSERT INTO placement_tree_changes (root_id, seq) VALUES (COALESCE(NEW.root_provider_id, NEW.id), (SELECT COALESCE(MAX(seq), 0) + 1 FROM placement_tree_changes)) ON CONFLICT (root_id) DO UPDATE SET seq = excluded.seq;
END;
--> statement-breakpoint
CREATE TRIGGER `tree_change_provider_delete` AFTER DELETE ON `resource_providers` BEGIN
  INSERT INTO placement_tree_changes (root_id, seq) VALUES (COALESCE(OLD.root_provider_id, OLD.id), (SELECT COALESCE(MAX(seq), 0) + 1 FROM placement_tree_changes)) ON CONFLICT (root_id) DO UPDATE SET seq = excluded.seq;
END;
--> statement-breakpoint
CREATE TRIGGER `tree_change_inventory_insert` AFTER INSERT ON `inventories` BEGIN
  INSERT INTO placement_tree_changes (root_id, seq) SELECT p.root_provider_id, (SELECT COALESCE(MAX(seq), 0) + 1 FROM placement_tree_changes) FROM resource_providers p WHERE p.id = NEW.resource_provider_id AND p.root_provider_id IS NOT NULL ON CONFLICT (root_id) DO UPDATE SET seq = excluded.seq;
END;
--> statement-breakpoint
CREATE TRIGGER `tree_change_inventory_update` AFTER UPDATE ON `inventories` BEGIN
  INSERT INTO placement_tree_changes (root_id, seq) SELECT p.root_provider_id, (SELECT COALESCE(MAX(seq), 0) + 1 FROM placement_tree_changes) FROM resource_providers p WHERE p.id = OLD.resource_provider_id AND p.root_provider_id IS NOT NULL ON CONFLICT (root_id) DO UPDATE SET seq = excluded.seq;
  INSERT INTO placement_tree_changes (root_id, seq) SELECT p.root_provider_id, (SELECT COALESCE(MAX(seq), 0) + 1 FROM placement_tree_changes) FROM resource_providers p WHERE p.id = NEW.resource_provider_id AND p.root_provider_id IS NOT NULL ON CONFLICT (root_id) DO UPDATE SET seq = excluded.seq;
END;
--> statement-breakpoint
CREATE TRIGGER `tree_change_inventory_delete` AFTER DELETE ON `inventories` BEGIN
  INSERT INTO placement_tree_changes (root_id, seq) SELECT p.root_provider_id, (SELECT COALESCE(MAX(seq), 0) + 1 FROM placement_tree_changes) FROM resource_providers p WHERE p.id = OLD.resource_provider_id AND p.root_provider_id IS NOT NULL ON CONFLICT (root_id) DO UPDATE SET seq = excluded.seq;
END;
--> statement-breakpoint
CREATE TRIGGER `tree_change_provider_trait_insert` AFTER INSERT ON `resource_provider_traits` BEGIN
  INSERT INTO placement_tree_changes (root_id, seq) SELECT p.root_provider_id, (SELECT COALESCE(MAX(seq), 0) + 1 FROM placement_tree_changes) FROM resource_providers p WHERE p.id = NEW.resource_provider_id AND p.root_provider_id IS NOT NULL ON CONFLICT (root_id) DO UPDATE SET seq = excluded.seq;
END;
--> statement-breakpoint
CREATE TRIGGER `tree_change_provider_trait_update` AFTER UPDATE ON `resource_provider_traits` BEGIN
  INSERT INTO placement_tree_changes (root_id, seq) SELECT p.root_provider_id, (SELECT COALESCE(MAX(seq), 0) + 1 FROM placement_tree_changes) FROM resource_providers p WHERE p.id = OLD.resource_provider_id AND p.root_provider_id IS NOT NULL ON CONFLICT (root_id) DO UPDATE SET seq = excluded.seq;
  INSERT INTO placement_tree_changes (root_id, seq) SELECT p.root_provider_id, (SELECT COALESCE(MAX(seq), 0) + 1 FROM placement_tree_changes) FROM resource_providers p WHERE p.id = NEW.resource_provider_id AND p.root_provider_id IS NOT NULL ON CONFLICT (root_id) DO UPDATE SET seq = excluded.seq;
END;
--> statement-breakpoint
CREATE TRIGGER `tree_change_provider_trait_delete` AFTER DELETE ON `resource_provider_traits` BEGIN
  INSERT INTO placement_tree_changes (root_id, seq) SELECT p.root_provider_id, (SELECT COALESCE(MAX(seq), 0) + 1 FROM placement_tree_changes) FROM resource_providers p WHERE p.id = OLD.resource_provider_id AND p.root_provider_id IS NOT NULL ON CONFLICT (root_id) DO UPDATE SET seq = excluded.seq;
END;
--> statement-breakpoint
CREATE TRIGGER `tree_change_provider_aggregate_insert` AFTER INSERT ON `resource_provider_aggregates` BEGIN
  INSERT INTO placement_tree_changes (root_id, seq) SELECT p.root_provider_id, (SELECT COALESCE(MAX(seq), 0) + 1 FROM placement_tree_changes) FROM resource_providers p WHERE p.id = NEW.resource_provider_id AND p.root_provider_id IS NOT NULL ON CONFLICT (root_id) DO UPDATE SET seq = excluded.seq;
END;
--> statement-breakpoint
CREATE TRIGGER `tree_change_provider_aggregate_update` AFTER UPDATE ON `resource_provider_aggregates` BEGIN
  INSERT INTO placement_tree_changes (root_id, seq) SELECT p.root_provider_id, (SELECT COALESCE(MAX(seq), 0) + 1 FROM placement_tree_changes) FROM resource_providers p WHERE p.id = OLD.resource_provider_id AND p.root_provider_id IS NOT NULL ON CONFLICT (root_id) DO UPDATE SET seq = excluded.seq;
  INSERT INTO placement_tree_changes (root_id, seq) SELECT p.root_provider_id, (SELECT COALESCE(MAX(seq), 0) + 1 FROM placement_tree_changes) FROM resource_providers p WHERE p.id = NEW.resource_provider_id AND p.root_provider_id IS NOT NULL ON CONFLICT (root_id) DO UPDATE SET seq = excluded.seq;
END;
--> statement-breakpoint
CREATE TRIGGER `tree_change_provider_aggregate_delete` AFTER DELETE ON `resource_provider_aggregates` BEGIN
  INSERT INTO placement_tree_changes (root_id, seq) SELECT p.root_provider_id, (SELECT COALESCE(MAX(seq), 0) + 1 FROM placement_tree_changes) FROM resource_providers p WHERE p.id = OLD.resource_provider_id AND p.root_provider_id IS NOT NULL ON CONFLICT (root_id) DO UPDATE SET seq = excluded.seq;
END;
--> statement-breakpoint
CREATE TRIGGER `tree_change_class_update` AFTER UPDATE OF name ON `resource_classes` BEGIN
  INSERT INTO placement_tree_changes (root_id, seq) VALUES (0, (SELECT COALESCE(MAX(seq), 0) + 1 FROM placement_tree_changes)) ON CONFLICT (root_id) DO UPDATE SET seq = excluded.seq;
END;
--> statement-breakpoint
CREATE TRIGGER `tree_change_class_delete` AFTER DELETE ON `resource_classes` BEGIN
  INSERT INTO placement_tree_changes (root_id, seq) VALUES (0, (SELECT COALESCE(MAX(seq), 0) + 1 FROM placement_tree_changes)) ON CONFLICT (root_id) DO UPDATE SET seq = excluded.seq;
END;
--> statement-breakpoint
CREATE TRIGGER `tree_change_trait_update` AFTER UPDATE OF name ON `traits` BEGIN
  INSERT INTO placement_tree_changes (root_id, seq) VALUES (0, (SELECT COALESCE(MAX(seq), 0) + 1 FROM placement_tree_changes)) ON CONFLICT (root_id) DO UPDATE SET seq = excluded.seq;
END;
--> statement-breakpoint
CREATE TRIGGER `tree_change_trait_delete` AFTER DELETE ON `traits` BEGIN
  INSERT INTO placement_tree_changes (root_id, seq) VALUES (0, (SELECT COALESCE(MAX(seq), 0) + 1 FROM placement_tree_changes)) ON CONFLICT (root_id) DO UPDATE SET seq = excluded.seq;
END;
