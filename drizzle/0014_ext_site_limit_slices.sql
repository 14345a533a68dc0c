CREATE TABLE `ext_site_limit_slices` (
	`site` text NOT NULL,
	`project` text NOT NULL,
	`resource_class` text NOT NULL,
	`amount` integer NOT NULL,
	PRIMARY KEY(`site`, `project`, `resource_class`)
);
--> statement-breakpoint
CREATE INDEX `ext_site_limit_slices_project` ON `ext_site_limit_slices` (`project`,`resource_class`);