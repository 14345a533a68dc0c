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
