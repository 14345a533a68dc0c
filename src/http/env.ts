// Hono environment shared by every route: what middleware puts on `c.var`.
import type { Context } from 'hono';
import type { Deps } from '../deps.js';
import type { Microversion } from './microversion.js';
import type { Credentials } from './policy.js';
import type { RequestTrace } from './trace.js';

export interface AppVariables {
  deps: Deps;
  requestId: string;
  /** Set by the microversion middleware of the API that serves the request. */
  mv: Microversion;
  credentials: Credentials;
  /** Set by the root app's first middleware (observe.ts) for every request. */
  trace: RequestTrace;
}

export type AppEnv = { Variables: AppVariables };
export type AppContext = Context<AppEnv>;
