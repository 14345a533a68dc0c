// placement-admin: the operator's command line over the diagnostics API.
//   placement-admin audit --endpoint URL [--token T] [--json] [--fix [--yes]] [--limit N]
//   placement-admin <command of an extension> ...   (AdminCommand: simulate, src/ext/simulate/admin-command.ts)
// It reads every page of GET /diagnostics/audit and prints a table (or the
// JSON); --fix then asks the server for a dry run of the safe repairs (delete
// empty consumers, re-send dead letters), prints it, and applies exactly those
// targets (asking first when run on a terminal, unless --yes).
// Responses are checked with the same zod schemas the server answers with.
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { parse as parseYaml } from 'yaml';
import * as z from 'zod';
import { VERSION } from '../shared/version.js';
import {
  AUDIT_MAX_LIMIT,
  AUDIT_SECTIONS,
  type AuditCheck,
  auditPageOf,
  AuditRepairsResult,
  type AuditRepairsRequest,
  type AuditReport,
  auditReportSchema,
  type AuditSection,
  auditSections,
} from './audit.js';

export interface AdminIo {
  out(text: string): void;
  err(text: string): void;
  /** Asks a yes/no question; undefined when not interactive (then --fix applies after the dry run). */
  confirm?: (question: string) => Promise<boolean>;
  fetch?: typeof fetch;
  /** The extensions' audit checks: their sections' schemas, titles and tables (none: the service's own sections only). */
  audits?: readonly AuditCheck[];
  /** The extensions' commands (none: audit and the data commands only). */
  commands?: readonly AdminCommand[];
  /** The usage of the data commands (import, verify, backup, restore: src/admin/cli.ts), printed after this CLI's own. */
  dataUsage?: string;
}

/** Lays out a table: a header row, then rows, columns padded. */
export type TableOf = (headers: string[], rows: string[][]) => string[];

/**
 * A command an extension adds to placement-admin (its object's `admin`):
 * `placement-admin NAME --endpoint URL [--token T] [--json] FILE.yaml` reads the
 * one YAML file, checks it with `file.schema` (a typo is named before anything
 * is sent), POSTs it to `path`, checks the answer with `answer` and prints it in
 * `words` (or as JSON). Declared as data, so the app that installs the
 * extension does not carry this CLI.
 */
export interface AdminCommand<F extends z.ZodType = z.ZodType, A extends z.ZodType = z.ZodType> {
  readonly name: string;
  /** Its line of the usage, after `placement-admin `. */
  readonly usage: string;
  /** Its paragraph of the usage. */
  help(exit: typeof EXIT): string;
  /** The file it takes: what it holds (for the usage error), and its schema. */
  readonly file: { readonly what: string; readonly schema: F };
  readonly path: string;
  readonly answer: A;
  /** The answer in words. */
  words(answer: z.infer<A>, table: TableOf): string[];
  /** The exit code of an answer. */
  exit(answer: z.infer<A>, codes: typeof EXIT): number;
}

/** Exit codes, for a monitoring check: nothing found, something to repair, a usage error, no answer. */
export const EXIT = { clean: 0, problems: 1, usage: 2, unknown: 3 } as const;

/** The usage, with each installed command's line and paragraph. */
const usageOf = (
  commands: readonly AdminCommand[],
) => `usage: placement-admin audit --endpoint URL [--token TOKEN] [--json] [--fix [--yes]] [--limit N]
${commands.map((c) => `       placement-admin ${c.usage}\n`).join('')}       placement-admin --help | --version

  --endpoint URL   the placement-edge service (e.g. http://127.0.0.1:8778)
  --token TOKEN    sent as X-Auth-Token (env PLACEMENT_ADMIN_TOKEN; default "admin" for noauth2)
  --json           print the report (and repair results) as JSON
  --fix            after the report, show a dry run of the safe repairs, then apply them:
                   delete consumers that hold no allocation, re-send dead-lettered events
  --yes            do not ask before applying (asked only on a terminal)
  --limit N        page size when reading the report (1-${AUDIT_MAX_LIMIT}, default 500)

${commands.map((c) => `${c.help(EXIT)}\n\n`).join('')}exit codes: ${EXIT.clean} the audit found nothing; ${EXIT.problems} it found something to repair (with --fix:
something is left after the repairs); ${EXIT.usage} usage error; ${EXIT.unknown} no audit (the service could
not be reached, refused the token, or answered unexpectedly)`;

class CliError extends Error {}

class UsageError extends Error {}

const ErrorEnvelope = z.object({ errors: z.array(z.object({ status: z.number(), detail: z.string() })).min(1) });

async function request<S extends z.ZodType>(
  io: AdminIo,
  base: string,
  token: string,
  method: 'GET' | 'POST',
  path: string,
  schema: S,
  body?: unknown,
): Promise<z.infer<S>> {
  const doFetch = io.fetch ?? fetch;
  const headers: Record<string, string> = {
    accept: 'application/json',
    'x-auth-token': token,
    'openstack-api-version': 'placement latest',
  };
  if (body !== undefined) headers['content-type'] = 'application/json';
  let res: Response;
  try {
    res = await doFetch(`${base}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  } catch (err) {
    throw new CliError(`cannot reach ${base}: ${err instanceof Error ? err.message : String(err)}`);
  }
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new CliError(`${method} ${path}: HTTP ${res.status}, not JSON: ${text.slice(0, 200)}`);
  }
  if (!res.ok) {
    const envelope = ErrorEnvelope.safeParse(json);
    throw new CliError(`${method} ${path}: HTTP ${res.status}: ${envelope.success ? envelope.data.errors[0]!.detail : text.slice(0, 200)}`);
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) throw new CliError(`${method} ${path}: unexpected answer: ${parsed.error.issues[0]?.message ?? ''}`);
  return parsed.data;
}

/** Every page of every section, merged into one report. */
async function fetchFullReport(io: AdminIo, base: string, token: string, limit: number): Promise<AuditReport> {
  const checks = io.audits ?? [];
  const schema = auditReportSchema(checks);
  const report: AuditReport = await request(io, base, token, 'GET', `/diagnostics/audit?limit=${limit}`, schema);
  for (const section of auditSections(checks)) {
    const first = auditPageOf(report, section);
    let marker = first?.next_marker ?? null;
    while (marker !== null) {
      const query = new URLSearchParams({ section, marker, limit: String(limit) });
      const page = auditPageOf(await request(io, base, token, 'GET', `/diagnostics/audit?${query}`, schema), section);
      if (!page) break;
      first!.items.push(...page.items);
      marker = page.next_marker;
    }
    if (first) first.next_marker = null;
  }
  return report;
}

function table(headers: string[], rows: string[][]): string[] {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return [line(headers), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)];
}

const TITLES: Record<AuditSection, string> = {
  over_capacity_providers: 'Providers whose usage exceeds capacity',
  empty_consumers: 'Consumers with no allocations',
  stuck_arqs: 'ARQs stuck in BindStarted past the binding timeout',
  bound_arqs_without_allocation: 'Bound ARQs whose instance holds no allocation',
  dead_letters: 'Dead-letter events',
};

export function formatReport(report: AuditReport, checks: readonly AuditCheck[] = []): string[] {
  const lines = [`Audit at ${report.generated_at} (binding timeout ${report.binding_timeout_s}s)`];
  for (const section of AUDIT_SECTIONS) {
    const total = report.summary[section];
    lines.push('', `${TITLES[section]}: ${total}`);
    if (total === 0) continue;
    switch (section) {
      case 'over_capacity_providers':
        lines.push(
          ...table(
            ['PROVIDER', 'NAME', 'CLASS', 'USED', 'CAPACITY', 'TOTAL', 'RESERVED', 'RATIO', 'CONSUMERS'],
            (report.over_capacity_providers?.items ?? []).flatMap((p) =>
              p.resources.map((r) => [
                p.uuid,
                p.name,
                r.resource_class,
                String(r.used),
                String(r.capacity),
                String(r.total),
                String(r.reserved),
                String(r.allocation_ratio),
                p.consumers
                  .filter((c) => r.resource_class in c.resources)
                  .map((c) => `${c.consumer_uuid}(${c.resources[r.resource_class]})`)
                  .join(' '),
              ]),
            ),
          ),
        );
        break;
      case 'empty_consumers':
        lines.push(
          ...table(
            ['CONSUMER', 'PROJECT', 'USER', 'TYPE', 'UPDATED'],
            (report.empty_consumers?.items ?? []).map((c) => [
              c.uuid,
              c.project_id,
              c.user_id,
              c.consumer_type ?? '',
              c.updated_at ?? c.created_at,
            ]),
          ),
        );
        break;
      case 'stuck_arqs':
        lines.push(
          ...table(
            ['ARQ', 'HOST', 'DEVICE RP', 'INSTANCE', 'STUCK FOR'],
            (report.stuck_arqs?.items ?? []).map((a) => [
              a.uuid,
              a.hostname ?? '',
              a.device_rp_uuid ?? '',
              a.instance_uuid ?? '',
              `${a.stuck_for_s}s`,
            ]),
          ),
        );
        break;
      case 'bound_arqs_without_allocation':
        lines.push(
          ...table(
            ['ARQ', 'HOST', 'DEVICE RP', 'INSTANCE', 'PROFILE'],
            (report.bound_arqs_without_allocation?.items ?? []).map((a) => [
              a.uuid,
              a.hostname ?? '',
              a.device_rp_uuid ?? '',
              a.instance_uuid ?? '',
              a.device_profile_name,
            ]),
          ),
        );
        break;
      case 'dead_letters':
        lines.push(
          ...table(
            ['ID', 'TOPIC', 'ATTEMPTS', 'LAST ERROR'],
            (report.dead_letters?.items ?? []).map((d) => [
              String(d.id),
              d.topic,
              String(d.attempts),
              (d.last_error ?? '').replace(/\s+/g, ' ').slice(0, 80),
            ]),
          ),
        );
        break;
    }
  }
  for (const findings of checks.flatMap((c) => c.findings ?? [])) {
    const total = report.summary[findings.name] ?? 0;
    lines.push('', `${findings.title}: ${total}`);
    if (total > 0)
      lines.push(...table(findings.table.headers, (auditPageOf(report, findings.name)?.items ?? []).flatMap(findings.table.rows)));
  }
  return lines;
}

function formatRepairs(result: AuditRepairsResult): string[] {
  const verb = result.dry_run ? 'Dry run: would' : 'Applied:';
  const lines = [
    `${verb} delete ${result.deleted_empty_consumers.length} empty consumer(s)${result.deleted_empty_consumers.length ? `: ${result.deleted_empty_consumers.join(' ')}` : ''}`,
    `${verb} re-send ${result.resent_dead_letters.length} dead letter(s)${result.resent_dead_letters.length ? `: ${result.resent_dead_letters.join(' ')}` : ''}`,
  ];
  const skipped = [...result.skipped.empty_consumers, ...result.skipped.dead_letters.map(String)];
  if (skipped.length) lines.push(`Skipped (changed since the report): ${skipped.join(' ')}`);
  return lines;
}

async function audit(args: string[], io: AdminIo): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      endpoint: { type: 'string' },
      token: { type: 'string' },
      json: { type: 'boolean', default: false },
      fix: { type: 'boolean', default: false },
      yes: { type: 'boolean', default: false },
      limit: { type: 'string', default: '500' },
    },
    strict: true,
    allowPositionals: false,
  });
  if (!values.endpoint) throw new UsageError('--endpoint is required');
  const limit = Number(values.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > AUDIT_MAX_LIMIT) throw new UsageError(`--limit must be 1..${AUDIT_MAX_LIMIT}`);
  const base = values.endpoint.replace(/\/+$/, '');
  const token = values.token ?? process.env.PLACEMENT_ADMIN_TOKEN ?? 'admin';

  const report = await fetchFullReport(io, base, token, limit);
  const output: { report: AuditReport; dry_run?: AuditRepairsResult; applied?: AuditRepairsResult } = { report };
  if (!values.json) io.out(formatReport(report, io.audits).join('\n'));
  if (values.fix) {
    const targets: AuditRepairsRequest = {
      dry_run: true,
      delete_empty_consumers: (report.empty_consumers?.items ?? []).map((c) => c.uuid),
      resend_dead_letters: (report.dead_letters?.items ?? []).map((d) => d.id),
    };
    const dry = await request(io, base, token, 'POST', '/diagnostics/audit/repairs', AuditRepairsResult, targets);
    output.dry_run = dry;
    if (!values.json) io.out(['', ...formatRepairs(dry)].join('\n'));
    const work = dry.deleted_empty_consumers.length + dry.resent_dead_letters.length;
    let apply = work > 0;
    if (apply && !values.yes && io.confirm) apply = await io.confirm('Apply these repairs? [y/N] ');
    if (apply) {
      const applied = await request(io, base, token, 'POST', '/diagnostics/audit/repairs', AuditRepairsResult, {
        dry_run: false,
        delete_empty_consumers: dry.deleted_empty_consumers,
        resend_dead_letters: dry.resent_dead_letters,
      });
      output.applied = applied;
      if (!values.json) io.out(formatRepairs(applied).join('\n'));
    } else if (!values.json) {
      io.out(work > 0 ? 'Nothing applied.' : 'Nothing to repair.');
    }
  }
  if (values.json) io.out(JSON.stringify(output, null, 2));
  const found = auditSections(io.audits ?? []).reduce((sum, section) => sum + (report.summary[section] ?? 0), 0);
  const repaired = (output.applied?.deleted_empty_consumers.length ?? 0) + (output.applied?.resent_dead_letters.length ?? 0);
  return found - repaired > 0 ? EXIT.problems : EXIT.clean;
}

/** Runs an extension's command (AdminCommand). */
async function runCommand(command: AdminCommand, args: string[], io: AdminIo): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: { endpoint: { type: 'string' }, token: { type: 'string' }, json: { type: 'boolean', default: false } },
    strict: true,
    allowPositionals: true,
  });
  if (!values.endpoint) throw new UsageError('--endpoint is required');
  if (positionals.length !== 1) throw new UsageError(`${command.name} takes one YAML file ${command.file.what}`);
  let text: string;
  try {
    text = await readFile(positionals[0]!, 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read ${positionals[0]}: ${err instanceof Error ? err.message : String(err)}`);
  }
  let body: unknown;
  try {
    body = parseYaml(text);
  } catch (err) {
    throw new UsageError(`${positionals[0]}: not YAML: ${err instanceof Error ? err.message : String(err)}`);
  }
  // Checked here with the server's own schema: a typo is named before anything is sent.
  const checked = command.file.schema.safeParse(body ?? {});
  if (!checked.success) {
    const issue = checked.error.issues[0]!;
    throw new UsageError(`${positionals[0]}: ${issue.path.join('.') || '(top)'}: ${issue.message}`);
  }
  const base = values.endpoint.replace(/\/+$/, '');
  const token = values.token ?? process.env.PLACEMENT_ADMIN_TOKEN ?? 'admin';
  const answer = await request(io, base, token, 'POST', command.path, command.answer, checked.data);
  io.out(values.json ? JSON.stringify(answer, null, 2) : command.words(answer, table).join('\n'));
  return command.exit(answer, EXIT);
}

/** Runs one command; returns its exit code (EXIT). */
export async function main(argv: string[], io: AdminIo): Promise<number> {
  const [command, ...rest] = argv;
  const commands = io.commands ?? [];
  const USAGE = usageOf(commands);
  const extension = commands.find((c) => c.name === command);
  try {
    if ((command === 'audit' || extension) && (rest.includes('--help') || rest.includes('-h'))) {
      io.out(USAGE);
      return EXIT.clean;
    }
    if (command === 'audit') return await audit(rest, io);
    if (extension) return await runCommand(extension, rest, io);
    if (command === '--version' || command === '-V') {
      io.out(`placement-admin ${VERSION}`);
      return EXIT.clean;
    }
    if (command === undefined || command === '--help' || command === '-h' || command === 'help') {
      (command === undefined ? io.err : io.out)(io.dataUsage ? `${USAGE}\n\n${io.dataUsage}` : USAGE);
      return command === undefined ? EXIT.usage : EXIT.clean;
    }
    throw new UsageError(`unknown command: ${command}`);
  } catch (err) {
    if (err instanceof CliError) {
      io.err(`placement-admin: ${err.message}`);
      return EXIT.unknown;
    }
    if (err instanceof UsageError || (err instanceof TypeError && 'code' in err && String(err.code).startsWith('ERR_PARSE_ARGS'))) {
      io.err(`placement-admin: ${err.message}\n${USAGE}`);
      return EXIT.usage;
    }
    throw err;
  }
}
