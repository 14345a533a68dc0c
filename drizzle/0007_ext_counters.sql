CREATE TABLE `ext_counter_consumption` (
	`resource_provider_id` integer NOT NULL,
	`resource_class_id` integer NOT NULL,
	`counter` text NOT NULL,
	`amount` integer NOT NULL,
	PRIMARY KEY(`resource_provider_id`, `resource_class_id`, `counter`)
);
--> statement-breakpoint
CREATE INDEX `ext_counter_consumption_class_idx` ON `ext_counter_consumption` (`resource_class_id`);--> statement-breakpoint
CREATE TABLE `ext_provider_counters` (
	`resource_provider_id` integer NOT NULL,
	`name` text NOT NULL,
	`total` integer NOT NULL,
	PRIMARY KEY(`resource_provider_id`, `name`)
);
--> statement-breakpoint
-- A provider's counters go with it; a consumption row with its inventory (src/db/schema/ext-counters.ts).
CREATE TRIGGER `ext_counters_provider_delete` AFTER DELETE ON `resource_providers` BEGIN
  DELETE FROM ext_provider_counters WHERE resource_provider_id = OLD.id;
  DELETE FROM ext_counter_consumption WHERE resource_provider_id = OLD.id;
END;
--> statement-breakpoint
CREATE TRIGGER `ext_counters_inventory_delete` AFTER DELETE ON `inventories` BEGIN
  DELETE FROM ext_counter_consumption WHERE resource_provider_id = OLD.resource_provider_id AND resource_class_id = OLD.resource_class_id;
END;
