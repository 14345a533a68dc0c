CREATE TABLE `allocations` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`resource_provider_id` integer NOT NULL,
	`consumer_id` text NOT NULL,
	`resource_class_id` integer NOT NULL,
	`used` integer NOT NULL,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')) NOT NULL,
	`updated_at` text
);
--> statement-breakpoint
CREATE INDEX `allocations_resource_provider_class_used_idx` ON `allocations` (`resource_provider_id`,`resource_class_id`,`used`);--> statement-breakpoint
CREATE INDEX `allocations_consumer_id_idx` ON `allocations` (`consumer_id`);--> statement-breakpoint
CREATE TABLE `consumer_types` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`name` text NOT NULL,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')) NOT NULL,
	`updated_at` text
);
--> statement-breakpoint
CREATE UNIQUE INDEX `uniq_consumer_types0name` ON `consumer_types` (`name`);--> statement-breakpoint
CREATE TABLE `consumers` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`uuid` text NOT NULL,
	`project_id` integer NOT NULL,
	`user_id` integer NOT NULL,
	`generation` integer DEFAULT 0 NOT NULL,
	`consumer_type_id` integer,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')) NOT NULL,
	`updated_at` text
);
--> statement-breakpoint
CREATE UNIQUE INDEX `uniq_consumers0uuid` ON `consumers` (`uuid`);--> statement-breakpoint
CREATE INDEX `consumers_project_id_user_id_uuid_idx` ON `consumers` (`project_id`,`user_id`,`uuid`);--> statement-breakpoint
CREATE TABLE `inventories` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`resource_provider_id` integer NOT NULL,
	`resource_class_id` integer NOT NULL,
	`total` integer NOT NULL,
	`reserved` integer DEFAULT 0 NOT NULL,
	`min_unit` integer DEFAULT 1 NOT NULL,
	`max_unit` integer NOT NULL,
	`step_size` integer DEFAULT 1 NOT NULL,
	`allocation_ratio` real DEFAULT 1 NOT NULL,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')) NOT NULL,
	`updated_at` text
);
--> statement-breakpoint
CREATE UNIQUE INDEX `uniq_inventories0resource_provider_resource_class` ON `inventories` (`resource_provider_id`,`resource_class_id`);--> statement-breakpoint
CREATE INDEX `inventories_resource_class_id_idx` ON `inventories` (`resource_class_id`);--> statement-breakpoint
CREATE TABLE `placement_aggregates` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`uuid` text NOT NULL,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')) NOT NULL,
	`updated_at` text
);
--> statement-breakpoint
CREATE UNIQUE INDEX `uniq_placement_aggregates0uuid` ON `placement_aggregates` (`uuid`);--> statement-breakpoint
CREATE TABLE `projects` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`external_id` text NOT NULL,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')) NOT NULL,
	`updated_at` text
);
--> statement-breakpoint
CREATE UNIQUE INDEX `uniq_projects0external_id` ON `projects` (`external_id`);--> statement-breakpoint
CREATE TABLE `resource_classes` (
	`id` integer PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')) NOT NULL,
	`updated_at` text
);
--> statement-breakpoint
CREATE UNIQUE INDEX `uniq_resource_classes0name` ON `resource_classes` (`name`);--> statement-breakpoint
CREATE TABLE `resource_provider_aggregates` (
	`resource_provider_id` integer NOT NULL,
	`aggregate_id` integer NOT NULL,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')) NOT NULL,
	`updated_at` text,
	PRIMARY KEY(`resource_provider_id`, `aggregate_id`)
);
--> statement-breakpoint
CREATE INDEX `resource_provider_aggregates_aggregate_id_idx` ON `resource_provider_aggregates` (`aggregate_id`);--> statement-breakpoint
CREATE TABLE `resource_provider_traits` (
	`resource_provider_id` integer NOT NULL,
	`trait_id` integer NOT NULL,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')) NOT NULL,
	`updated_at` text,
	PRIMARY KEY(`resource_provider_id`, `trait_id`)
);
--> statement-breakpoint
CREATE INDEX `resource_provider_traits_trait_id_idx` ON `resource_provider_traits` (`trait_id`);--> statement-breakpoint
CREATE TABLE `resource_providers` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`uuid` text NOT NULL,
	`name` text NOT NULL,
	`generation` integer DEFAULT 0 NOT NULL,
	`root_provider_id` integer,
	`parent_provider_id` integer,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')) NOT NULL,
	`updated_at` text
);
--> statement-breakpoint
CREATE UNIQUE INDEX `uniq_resource_providers0uuid` ON `resource_providers` (`uuid`);--> statement-breakpoint
CREATE UNIQUE INDEX `uniq_resource_providers0name` ON `resource_providers` (`name`);--> statement-breakpoint
CREATE INDEX `resource_providers_root_provider_id_idx` ON `resource_providers` (`root_provider_id`);--> statement-breakpoint
CREATE INDEX `resource_providers_parent_provider_id_idx` ON `resource_providers` (`parent_provider_id`);--> statement-breakpoint
CREATE TABLE `traits` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`name` text NOT NULL,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')) NOT NULL,
	`updated_at` text
);
--> statement-breakpoint
CREATE UNIQUE INDEX `uniq_traits0name` ON `traits` (`name`);--> statement-breakpoint
CREATE TABLE `users` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`external_id` text NOT NULL,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')) NOT NULL,
	`updated_at` text
);
--> statement-breakpoint
CREATE UNIQUE INDEX `uniq_users0external_id` ON `users` (`external_id`);