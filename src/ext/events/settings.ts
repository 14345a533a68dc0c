// The events stream's settings, validated with the rest of the configuration
// (the extension's `settings`, which src/config.ts adds to its schema).
import * as z from 'zod';

export const EVENTS_SETTINGS = {
  /** How long an event is kept: the sweep removes older ones (a reader further behind is told it missed some). */
  PLACEMENT_EXT_EVENTS_RETENTION_HOURS: z.coerce.number().int().min(1).default(168),
};

export type EventsConfig = { PLACEMENT_EXT_EVENTS_RETENTION_HOURS: number };

/** The app's configuration, read as this extension's settings (validated there). */
export const eventsConfigOf = (config: Readonly<Record<string, unknown>>): EventsConfig => config as unknown as EventsConfig;
