export * from './placement.js';
export * from './cyborg.js';
export * from './ext.js';
export * from './ext-counters.js';
export * from './ext-limits.js';
export * from './ext-holds.js';
export * from './ext-preemption.js';
export * from './ext-events.js';
