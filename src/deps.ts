// Everything the app needs from the outside world, injected by the entry
// (Node or Worker) or by a test. createApp() does no I/O of its own.
import type { AppConfig } from './config.js';
import type { DataStore } from './db/client.js';
import type { PolicyEnforcer } from './http/policy.js';

export interface Logger {
  debug(msg: string, extra?: Record<string, unknown>): void;
  info(msg: string, extra?: Record<string, unknown>): void;
  warn(msg: string, extra?: Record<string, unknown>): void;
  error(msg: string, extra?: Record<string, unknown>): void;
}

export interface Deps {
  store: DataStore;
  config: AppConfig;
  policy: PolicyEnforcer;
  clock: () => Date;
  newId: () => string;
  log: Logger;
}

export function consoleLogger(level: AppConfig['LOG_LEVEL']): Logger {
  const order = ['debug', 'info', 'warn', 'error', 'silent'];
  const min = order.indexOf(level);
  const at = (name: 'debug' | 'info' | 'warn' | 'error') => (msg: string, extra?: Record<string, unknown>) => {
    if (order.indexOf(name) >= min) console.error(JSON.stringify({ level: name, msg, ...extra }));
  };
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}
