CREATE TABLE `placement_write_marks` (
	`id` integer PRIMARY KEY NOT NULL,
	`mark` integer NOT NULL
);
--> statement-breakpoint
INSERT INTO `placement_write_marks` (`id`, `mark`) VALUES (1, 0);
