// One declaration per route: its path, verbs and handlers, and what
// GET /openapi.json says about it (summary, microversion range, the zod
// schemas the handler validates with, the answers). The router registers
// the handlers from it and the document (src/openapi/) reads the same
// declaration, so neither can drift from the other. The path is a literal
// type, so a handler's `c.req.param('uuid')` is checked against it.
import { type Context, Hono, type Handler } from 'hono';
import { notFound } from '../errors.js';
import * as z from 'zod';
import type { Microversion } from '../microversion.js';
import type { AppEnv } from './env.js';
import type { HttpKit } from './kit.js';
import { readBody } from './validate.js';

/** Which API an operation belongs to: its microversion header and error envelope. */
export type ApiName = 'placement' | 'accelerator' | 'diagnostics' | 'extensions' | 'meta';
export type Method = 'get' | 'put' | 'post' | 'patch' | 'delete';
type Verb = 'GET' | 'PUT' | 'POST' | 'PATCH' | 'DELETE';

/** A query parameter as the handler knows it; `schema` when a zod schema checks it. */
export interface QueryParam {
  name: string;
  description?: string;
  schema?: z.ZodType;
  required?: boolean;
  /** Keys matched by pattern (granular request groups), as a regex source. */
  pattern?: string;
  /** A place for the installed extensions' parameters of a candidates query: the document lists those there. */
  extensionParams?: true;
}

/** What the document says about one operation. */
export interface OperationDoc {
  summary: string;
  /** The operation exists from this microversion: below it the route table answers 404 (or `belowSince`) before the handler runs. */
  since?: string;
  /** What the operation answers below `since` when not 404: 405 where the path has other methods then (DELETE inventories before 1.5). */
  belowSince?: 405;
  /** No token needed. */
  public?: boolean;
  /** The request body schema at a microversion; undefined where it takes none. */
  body?: (mv: Microversion) => z.ZodType | undefined;
  /** Name for the body's component schemas (suffixed with the version range). */
  bodyName?: string;
  query?: (mv: Microversion) => QueryParam[];
  /** Success statuses and what they mean. */
  responses: Record<number, string>;
  /** Success statuses that carry no body (202 and 204 never do). */
  bodyless?: number[];
  /** The success body's schema, where one exists, and its component name. */
  responseSchema?: z.ZodType;
  /** The success body's schema at a microversion (instead of responseSchema), named after responseName. */
  response?: (mv: Microversion) => z.ZodType | undefined;
  responseName?: string;
  /** Media types of the success body when it is not JSON (the dashboard's page and assets). */
  mediaTypes?: string[];
}

/** An operation as the document lists it: its API, method and path (Hono form, `/resource_providers/:uuid`). */
export interface Operation extends OperationDoc {
  api: ApiName;
  method: Method;
  path: string;
}

/** One verb of a path: the document's part and the handler, typed by the path's parameters. */
export interface Route<P extends string> extends OperationDoc {
  handler: Handler<AppEnv, P>;
}

export type Verbs<P extends string> = Partial<Record<Verb, Route<P>>>;

/**
 * The routes of one resource file: `resource(path, verbs)` registers the
 * verbs on `app` (through the API's kit: the other methods answer 405 with
 * Allow) and records each operation, with its path below the table's mount
 * point, for the document.
 */
export class RouteTable {
  readonly app = new Hono<AppEnv>();
  readonly operations: Operation[] = [];

  constructor(
    readonly api: ApiName,
    private readonly kit?: Pick<HttpKit, 'resource' | 'requireVersion'>,
  ) {}

  resource<P extends string>(path: P, verbs: Verbs<P>): this {
    const handlers: Partial<Record<Verb, Handler<AppEnv, P>>> = {};
    for (const [verb, route] of Object.entries(verbs) as [Verb, Route<P>][]) {
      const { handler, ...doc } = route;
      handlers[verb] = this.gated(route, handler);
      this.operations.push({ api: this.api, method: verb.toLowerCase() as Method, path, ...doc });
    }
    if (this.kit) this.kit.resource(this.app, path, handlers as Partial<Record<Verb, Handler<AppEnv>>>);
    else for (const [verb, handler] of Object.entries(handlers)) this.app.on(verb, path, handler);
    return this;
  }

  /** `handler`, run only from the route's `since` on (the API's 404 or 405 below it). */
  private gated<P extends string>({ since, belowSince }: OperationDoc, handler: Handler<AppEnv, P>): Handler<AppEnv, P> {
    if (since === undefined) return handler;
    const kit = this.kit;
    if (!kit) throw new Error(`a ${this.api} route with since ${since} needs the API's kit to refuse older microversions`);
    return (c, next) => {
      kit.requireVersion(c, since, belowSince);
      return handler(c, next);
    };
  }
}

/** The document's part of an answer with a JSON body: its status and meaning, its component name, its schema (or one per microversion). */
export function answers(
  status: number,
  description: string,
  name: string,
  schema: z.ZodType | ((mv: Microversion) => z.ZodType | undefined),
): Pick<OperationDoc, 'responses' | 'responseSchema' | 'response' | 'responseName'> {
  const body = typeof schema === 'function' ? { response: schema } : { responseSchema: schema };
  return { responses: { [status]: description }, ...body, responseName: name };
}

/** What a JSON operation answers: status (200 unless said), its meaning, and the body's component name and schema (none for 204). */
export interface Answer {
  status?: 200 | 201 | 204;
  description: string;
  name?: string;
  schema?: z.ZodType;
}

/** One JSON operation declared as data around the work it does (json()). */
export interface JsonOperation<P extends string, B> extends Pick<OperationDoc, 'summary' | 'since' | 'query'> {
  /** Its JSON body: component name and schema, checked (in placement's wording) before `run`. */
  body?: { name: string; schema: z.ZodType<B> };
  answer: Answer;
  /** It answers the state now: clients revalidate (cache-control: no-cache). */
  fresh?: true;
  /** Where `run` finds nothing (null, undefined or false): the 404's detail. */
  missing?: (c: Context<AppEnv, P>) => string;
  /** The work: from the request (and its checked body) to the answer's body. */
  run(c: Context<AppEnv, P>, body: B): Promise<unknown>;
}

/** The route of a JSON operation: reads the body, runs, answers JSON (or 204), with the document's part from the same declaration. */
export function json<P extends string, B = undefined>(op: JsonOperation<P, B>): Route<P> {
  const { body, answer, fresh, missing, run, ...doc } = op;
  const status = answer.status ?? 200;
  return {
    ...doc,
    ...(body ? { body: always(body.schema), bodyName: body.name } : {}),
    responses: { [status]: answer.description },
    ...(answer.schema ? { responseSchema: answer.schema, responseName: answer.name } : {}),
    handler: async (c) => {
      const input = body ? await readBody(c, body.schema) : (undefined as B);
      const result = await run(c, input);
      if (missing && (result === undefined || result === null || result === false)) throw notFound(missing(c));
      if (fresh) c.header('cache-control', 'no-cache');
      return status === 204 ? c.body(null, 204) : c.json(result, status);
    },
  };
}

/** One app serving every table, mounted in order. */
export function joinRoutes(tables: RouteTable[]): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  for (const table of tables) app.route('/', table.app);
  return app;
}

/** The operations of `tables`, in order, with `prefix` (where the tables are mounted) before each path. */
export function operationsBelow(prefix: string, tables: RouteTable[]): Operation[] {
  return tables.flatMap((t) => t.operations.map((op) => ({ ...op, path: `${prefix}${op.path}` })));
}

/** A body that is text (the dashboard's page and assets, the metrics): one schema, so the document names it once. */
export const TEXT_BODY = z.string();

/** The same schema at every microversion. */
export const always = (schema: z.ZodType) => () => schema;

/** Query parameters known by name and description only (the handler parses them itself). */
export const named =
  (...list: [string, string][]) =>
  () =>
    list.map(([name, description]) => ({ name, description }));

/** The query keys of a strict zod object, each with its schema. */
export function zodQuery(schema: z.ZodType): QueryParam[] {
  const shape =
    (schema as unknown as { shape?: Record<string, z.ZodType> }).shape ??
    (schema as unknown as { def?: { in?: { shape?: Record<string, z.ZodType> } } }).def?.in?.shape ??
    {};
  return Object.entries(shape).map(([name, field]) => ({
    name,
    schema: field,
    required: !(field as unknown as { isOptional(): boolean }).isOptional(),
  }));
}
