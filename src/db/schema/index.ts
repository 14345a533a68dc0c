export * from './placement.js';
export * from './cyborg.js';
