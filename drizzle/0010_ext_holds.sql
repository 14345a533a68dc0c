CREATE TABLE `ext_hold_amounts` (
	`hold_uuid` text NOT NULL,
	`resource_provider_id` integer NOT NULL,
	`resource_class_id` integer NOT NULL,
	`amount` integer NOT NULL,
	PRIMARY KEY(`hold_uuid`, `resource_provider_id`, `resource_class_id`)
);
--> statement-breakpoint
CREATE INDEX `ext_hold_amounts_provider_idx` ON `ext_hold_amounts` (`resource_provider_id`,`resource_class_id`);--> statement-breakpoint
CREATE TABLE `ext_hold_draws` (
	`consumer_uuid` text PRIMARY KEY NOT NULL,
	`hold_uuid` text NOT NULL,
	`consumer_generation` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `ext_hold_draws_hold_idx` ON `ext_hold_draws` (`hold_uuid`);--> statement-breakpoint
CREATE TABLE `ext_holds` (
	`uuid` text PRIMARY KEY NOT NULL,
	`project_id` text NOT NULL,
	`start_ms` integer NOT NULL,
	`end_ms` integer NOT NULL,
	`end_action` text NOT NULL,
	`ignore_allocations` integer DEFAULT 0 NOT NULL,
	`generation` integer DEFAULT 1 NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `ext_holds_end_ms_idx` ON `ext_holds` (`end_ms`);--> statement-breakpoint
CREATE TABLE `ext_holds_epoch` (
	`id` integer PRIMARY KEY NOT NULL,
	`epoch` integer NOT NULL,
	`database` text NOT NULL
);
--> statement-breakpoint
CREATE TRIGGER `ext_holds_delete` AFTER DELETE ON `ext_holds` BEGIN
  DELETE FROM ext_hold_amounts WHERE hold_uuid = OLD.uuid;
  DELETE FROM ext_hold_draws WHERE hold_uuid = OLD.uuid;
END;
--> statement-breakpoint
CREATE TRIGGER `ext_hold_amounts_provider_delete` AFTER DELETE ON `resource_providers` BEGIN
  DELETE FROM ext_hold_amounts WHERE resource_provider_id = OLD.id;
END;
--> statement-breakpoint
CREATE TRIGGER `ext_hold_draws_consumer_delete` AFTER DELETE ON `consumers` BEGIN
  DELETE FROM ext_hold_draws WHERE consumer_uuid = OLD.uuid;
END;
--> statement-breakpoint
-- The epoch the candidates' read hook compares (src/ext/holds/candidates.ts): it moves with every change the
-- holds' rule reads, so a hook that kept the state of an epoch knows it is still the database's.
INSERT INTO ext_holds_epoch (id, epoch, database) VALUES (1, 0, lower(hex(randomblob(8))));
--> statement-breakpoint
CREATE TRIGGER `ext_holds_epoch_hold_insert` AFTER INSERT ON `ext_holds` BEGIN UPDATE ext_holds_epoch SET epoch = epoch + 1; END;
--> statement-breakpoint
CREATE TRIGGER `ext_holds_epoch_hold_update` AFTER UPDATE ON `ext_holds` BEGIN UPDATE ext_holds_epoch SET epoch = epoch + 1; END;
--> statement-breakpoint
CREATE TRIGGER `ext_holds_epoch_hold_delete` AFTER DELETE ON `ext_holds` BEGIN UPDATE ext_holds_epoch SET epoch = epoch + 1; END;
--> statement-breakpoint
CREATE TRIGGER `ext_holds_epoch_amount_insert` AFTER INSERT ON `ext_hold_amounts` BEGIN UPDATE ext_holds_epoch SET epoch = epoch + 1; END;
--> statement-breakpoint
CREATE TRIGGER `ext_holds_epoch_amount_delete` AFTER DELETE ON `ext_hold_amounts` BEGIN UPDATE ext_holds_epoch SET epoch = epoch + 1; END;
--> statement-breakpoint
CREATE TRIGGER `ext_holds_epoch_draw_insert` AFTER INSERT ON `ext_hold_draws` BEGIN UPDATE ext_holds_epoch SET epoch = epoch + 1; END;
--> statement-breakpoint
CREATE TRIGGER `ext_holds_epoch_draw_update` AFTER UPDATE ON `ext_hold_draws` BEGIN UPDATE ext_holds_epoch SET epoch = epoch + 1; END;
--> statement-breakpoint
CREATE TRIGGER `ext_holds_epoch_draw_delete` AFTER DELETE ON `ext_hold_draws` BEGIN UPDATE ext_holds_epoch SET epoch = epoch + 1; END;
--> statement-breakpoint
CREATE TRIGGER `ext_holds_epoch_lease_insert` AFTER INSERT ON `ext_leases` WHEN EXISTS (SELECT 1 FROM ext_hold_amounts) BEGIN UPDATE ext_holds_epoch SET epoch = epoch + 1; END;
--> statement-breakpoint
CREATE TRIGGER `ext_holds_epoch_lease_update` AFTER UPDATE ON `ext_leases` WHEN EXISTS (SELECT 1 FROM ext_hold_amounts) BEGIN UPDATE ext_holds_epoch SET epoch = epoch + 1; END;
--> statement-breakpoint
CREATE TRIGGER `ext_holds_epoch_lease_delete` AFTER DELETE ON `ext_leases` WHEN EXISTS (SELECT 1 FROM ext_hold_amounts) BEGIN UPDATE ext_holds_epoch SET epoch = epoch + 1; END;
--> statement-breakpoint
CREATE TRIGGER `ext_holds_epoch_allocation_insert` AFTER INSERT ON `allocations`
WHEN EXISTS (SELECT 1 FROM ext_hold_amounts WHERE resource_provider_id = NEW.resource_provider_id AND resource_class_id = NEW.resource_class_id)
BEGIN UPDATE ext_holds_epoch SET epoch = epoch + 1; END;
--> statement-breakpoint
CREATE TRIGGER `ext_holds_epoch_allocation_update` AFTER UPDATE ON `allocations`
WHEN EXISTS (SELECT 1 FROM ext_hold_amounts WHERE (resource_provider_id = NEW.resource_provider_id AND resource_class_id = NEW.resource_class_id)
  OR (resource_provider_id = OLD.resource_provider_id AND resource_class_id = OLD.resource_class_id))
BEGIN UPDATE ext_holds_epoch SET epoch = epoch + 1; END;
--> statement-breakpoint
CREATE TRIGGER `ext_holds_epoch_allocation_delete` AFTER DELETE ON `allocations`
WHEN EXISTS (SELECT 1 FROM ext_hold_amounts WHERE resource_provider_id = OLD.resource_provider_id AND resource_class_id = OLD.resource_class_id)
BEGIN UPDATE ext_holds_epoch SET epoch = epoch + 1; END;
--> statement-breakpoint
CREATE TRIGGER `ext_holds_epoch_consumer_update` AFTER UPDATE OF generation ON `consumers`
WHEN EXISTS (SELECT 1 FROM ext_hold_draws WHERE consumer_uuid = NEW.uuid) OR EXISTS (SELECT 1 FROM ext_leases WHERE consumer_uuid = NEW.uuid AND EXISTS (SELECT 1 FROM ext_hold_amounts))
BEGIN UPDATE ext_holds_epoch SET epoch = epoch + 1; END;
--> statement-breakpoint
CREATE TRIGGER `ext_holds_epoch_inventory_insert` AFTER INSERT ON `inventories`
WHEN EXISTS (SELECT 1 FROM ext_hold_amounts WHERE resource_provider_id = NEW.resource_provider_id AND resource_class_id = NEW.resource_class_id)
BEGIN UPDATE ext_holds_epoch SET epoch = epoch + 1; END;
--> statement-breakpoint
CREATE TRIGGER `ext_holds_epoch_inventory_update` AFTER UPDATE ON `inventories`
WHEN EXISTS (SELECT 1 FROM ext_hold_amounts WHERE resource_provider_id = NEW.resource_provider_id AND resource_class_id = NEW.resource_class_id)
BEGIN UPDATE ext_holds_epoch SET epoch = epoch + 1; END;
--> statement-breakpoint
CREATE TRIGGER `ext_holds_epoch_inventory_delete` AFTER DELETE ON `inventories`
WHEN EXISTS (SELECT 1 FROM ext_hold_amounts WHERE resource_provider_id = OLD.resource_provider_id AND resource_class_id = OLD.resource_class_id)
BEGIN UPDATE ext_holds_epoch SET epoch = epoch + 1; END;
