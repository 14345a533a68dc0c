// Hono environment shared by every route: what middleware puts on `c.var`.
import type { Context } from 'hono';
import type { Deps } from '../deps.js';
import type { Microversion } from './microversion.js';
import type { Credentials } from './policy.js';

export interface AppVariables {
  deps: Deps;
  requestId: string;
  /** Set by the microversion middleware of the API that serves the request. */
  mv: Microversion;
  credentials: Credentials;
}

export type AppEnv = { Variables: AppVariables };
export type AppContext = Context<AppEnv>;
