CREATE TABLE `ext_consumer_priorities` (
	`consumer_uuid` text PRIMARY KEY NOT NULL,
	`priority` integer NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE TABLE `ext_preemption_victims` (
	`consumer_uuid` text PRIMARY KEY NOT NULL,
	`preemption_id` text NOT NULL,
	`consumer_generation` integer NOT NULL,
	`priority` integer NOT NULL,
	`resources` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `ext_preemption_victims_preemption_idx` ON `ext_preemption_victims` (`preemption_id`);--> statement-breakpoint
CREATE TABLE `ext_preemptions` (
	`id` text PRIMARY KEY NOT NULL,
	`preemptor_consumer_uuid` text NOT NULL,
	`preemptor_project` text NOT NULL,
	`priority` integer NOT NULL,
	`hold_id` text,
	`grace_seconds` integer NOT NULL,
	`created_at` text NOT NULL
);
--> statement-breakpoint
CREATE TABLE `ext_project_priorities` (
	`project_external_id` text PRIMARY KEY NOT NULL,
	`priority` integer NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE TRIGGER `ext_priorities_consumer_delete` AFTER DELETE ON `consumers` BEGIN
  DELETE FROM ext_consumer_priorities WHERE consumer_uuid = OLD.uuid;
END;
