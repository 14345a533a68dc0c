CREATE TABLE `ext_limit_usage` (
	`project_id` integer NOT NULL,
	`resource_class_id` integer NOT NULL,
	`used` integer NOT NULL,
	PRIMARY KEY(`project_id`, `resource_class_id`)
);
--> statement-breakpoint
CREATE TABLE `ext_limits` (
	`project` text NOT NULL,
	`resource_class` text NOT NULL,
	`resource_limit` integer NOT NULL,
	PRIMARY KEY(`project`, `resource_class`)
);
--> statement-breakpoint
CREATE TABLE `ext_limits_sync` (
	`id` integer PRIMARY KEY NOT NULL,
	`synced_at` integer NOT NULL,
	`source` text NOT NULL
);
