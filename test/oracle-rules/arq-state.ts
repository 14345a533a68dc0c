// Frozen copy of src/cyborg/arq-state.ts for the differential oracles (test/oracle-rules/README.md).
// ARQ states and the one transition table (cyborg/common/constants.py).
export const ArqState = {
  INITIAL: 'Initial',
  BIND_STARTED: 'BindStarted',
  BOUND: 'Bound',
  UNBOUND: 'Unbound',
  BIND_FAILED: 'BindFailed',
  UNBIND_FAILED: 'UnbindFailed',
  DELETING: 'Deleting',
} as const;
export type ArqState = (typeof ArqState)[keyof typeof ArqState];

/** For each target state, the states it may be entered from. */
export const ALLOWED_FROM: Record<ArqState, readonly ArqState[]> = {
  Initial: [],
  BindStarted: ['Initial', 'Unbound'],
  Bound: ['BindStarted'],
  Unbound: ['Initial', 'BindStarted', 'Bound', 'BindFailed'],
  BindFailed: ['BindStarted', 'Bound'],
  UnbindFailed: [],
  Deleting: ['Initial', 'BindStarted', 'Bound', 'Unbound', 'BindFailed'],
};

export function canTransition(from: string, to: ArqState): boolean {
  return (ALLOWED_FROM[to] as readonly string[]).includes(from);
}

/** Resolved states and the Nova event status each maps to. */
export const RESOLVED_EVENT_STATUS: Partial<Record<ArqState, 'completed' | 'failed'>> = {
  Bound: 'completed',
  BindFailed: 'failed',
  Deleting: 'failed',
};

export const isResolved = (state: string) => state in RESOLVED_EVENT_STATUS;
