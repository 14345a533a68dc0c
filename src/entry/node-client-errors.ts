// Requests Node's HTTP parser refuses before the app sees them. Each gets an
// answer in the API's envelope instead of a bare "400 Bad Request":
//  - a method llhttp does not know (FOO, TRACK): the head is parsed here and
//    handed to the app, which answers 405 with Allow (or 401/404) as for any
//    other method;
//  - a head over the parser's limit (MAX_HEADER_BYTES): 414 when the request
//    line is that long, else 431;
//  - a non-integer content-length: 400, as upstream.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { RequestError } from '@hono/node-server';
import { STATUS_TITLES, webobDetail } from '../http/api-error.js';
import { MAX_URL_LENGTH } from '../http/url.js';

/**
 * Node's limit on a request head (its default is 16 KiB), well above
 * MAX_URL_LENGTH so that the app answers long URLs itself, with its 414.
 */
export const MAX_HEADER_BYTES = 256 * 1024;

type Fetch = (request: Request) => Response | Promise<Response>;
interface ParsedHead {
  method: string;
  target: string;
  headers: Headers;
}

function parseHead(raw: Buffer): ParsedHead | null {
  const text = raw.toString('latin1');
  const end = text.indexOf('\r\n\r\n');
  if (end < 0) return null;
  const [requestLine, ...lines] = text.slice(0, end).split('\r\n');
  const match = /^([!#$%&'*+\-.^_`|~0-9A-Za-z]+) (\/\S*) HTTP\/1\.[01]$/.exec(requestLine ?? '');
  if (!match) return null;
  const headers = new Headers();
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon <= 0) return null;
    try {
      headers.append(line.slice(0, colon).trim(), line.slice(colon + 1).trim());
    } catch {
      return null;
    }
  }
  return { method: match[1]!, target: match[2]!, headers };
}

/** A Request for any method token; fetch refuses TRACE/TRACK/CONNECT, so those travel as a GET whose method reads right. */
function requestFor(head: ParsedHead): Request {
  const url = `http://${head.headers.get('host') ?? 'localhost'}${head.target}`;
  try {
    return new Request(url, { method: head.method, headers: head.headers });
  } catch {
    const carried = new Request(url, { method: 'GET', headers: head.headers });
    Object.defineProperty(carried, 'method', { get: () => head.method });
    return carried;
  }
}

async function writeResponse(socket: Socket, res: Response): Promise<void> {
  const body = Buffer.from(await res.arrayBuffer());
  const lines = [`HTTP/1.1 ${res.status} ${STATUS_TITLES[res.status] ?? res.statusText}`];
  res.headers.forEach((value, name) => {
    if (name !== 'content-length' && name !== 'connection') lines.push(`${name}: ${value}`);
  });
  lines.push(`content-length: ${body.length}`, 'connection: close');
  socket.end(Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1'), body]));
}

/** The error envelope of the API a path belongs to. */
function envelope(path: string, status: number, message: string): Response {
  const headers = { 'content-type': 'application/json', 'x-openstack-request-id': `req-${crypto.randomUUID()}` };
  if (/^\/accelerator(\/|$)/.test(path)) {
    const fault = { faultcode: status < 500 ? 'Client' : 'Server', faultstring: message, debuginfo: null };
    return new Response(JSON.stringify({ error_message: JSON.stringify(fault) }), { status, headers });
  }
  const error = {
    status,
    title: STATUS_TITLES[status] ?? 'Error',
    detail: webobDetail(status, message),
    request_id: headers['x-openstack-request-id'],
  };
  return new Response(JSON.stringify({ errors: [error] }), { status, headers });
}

/** llhttp's reason ("Invalid header value char"), without Node's "Parse Error: " prefix. */
function parseReason(err: NodeJS.ErrnoException & { reason?: string }): string {
  return (err.reason ?? err.message).replace(/^Parse Error: /, '').replace(/\.$/, '');
}

function requestPath(raw: Buffer | undefined): string {
  return /^\S+ (\/[^\s?]*)/.exec(raw?.subarray(0, 256).toString('latin1') ?? '')?.[1] ?? '/';
}

/**
 * The answer to a request @hono/node-server could not build a fetch Request
 * from (no Host header, a request target that is not a path): a 400 in the
 * placement envelope, the path being unknown. Anything else that escaped the
 * app is a 500, worded like the app's own.
 */
export function unreadableRequest(err: unknown): Response {
  if (err instanceof RequestError) return envelope('/', 400, `The request could not be read: ${err.message}.`);
  return envelope('/', 500, 'An unexpected error occurred.');
}

/** HTTP/1.1 requires a Host header (RFC 9112, 3.2): without one, a 400 in the envelope of the API the path names. */
export function refuseWithoutHost(incoming: IncomingMessage, outgoing: ServerResponse): boolean {
  if (incoming.headers.host !== undefined || incoming.httpVersion !== '1.1') return false;
  const res = envelope(incoming.url?.split('?')[0] ?? '/', 400, 'The request has no Host header; HTTP/1.1 requires one.');
  void res.text().then((body) => {
    outgoing.writeHead(400, { ...Object.fromEntries(res.headers), 'content-length': Buffer.byteLength(body), connection: 'close' });
    outgoing.end(body);
  });
  return true;
}

export function handleClientError(fetch: Fetch, err: NodeJS.ErrnoException & { rawPacket?: Buffer }, socket: Socket): void {
  if (!socket.writable) return;
  const answer = async (): Promise<Response | null> => {
    const path = requestPath(err.rawPacket);
    switch (err.code) {
      case 'HPE_INVALID_METHOD': {
        const head = err.rawPacket ? parseHead(err.rawPacket) : null;
        return head ? fetch(requestFor(head)) : null;
      }
      case 'HPE_HEADER_OVERFLOW': {
        // rawPacket is the chunk being parsed: the head's start only when the
        // overflow came in the first chunk. A request line seen there and
        // longer than the URL limit is a 414; anything else a 431.
        const packet = err.rawPacket;
        const startsHead = packet !== undefined && /^[A-Za-z]+ \//.test(packet.subarray(0, 64).toString('latin1'));
        const lineEnd = packet?.indexOf('\r\n') ?? -1;
        return startsHead && (lineEnd < 0 || lineEnd > MAX_URL_LENGTH)
          ? envelope(path, 414, `The request URL is longer than ${MAX_URL_LENGTH} characters.`)
          : envelope(path, 431, 'The request line or headers are too large.');
      }
      case 'ERR_HTTP_REQUEST_TIMEOUT':
        return envelope(path, 408, 'The request was not received completely in time.');
      case 'HPE_INVALID_CONTENT_LENGTH':
      case 'HPE_UNEXPECTED_CONTENT_LENGTH':
        return envelope(path, 400, 'content-length header must be an integer');
      default:
        // Anything else the parser refuses (a control character in a header,
        // a broken chunk size, a bare LF): still a 400 in the envelope.
        return err.code?.startsWith('HPE_') ? envelope(path, 400, `The request is not valid HTTP/1.1: ${parseReason(err)}.`) : null;
    }
  };
  const bare = () => {
    socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\n\r\n');
  };
  answer()
    .then((res) => (res ? writeResponse(socket, res) : bare()), bare)
    .catch(() => socket.destroy());
}
