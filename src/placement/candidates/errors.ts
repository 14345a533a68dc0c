// The errors the candidates engine throws: a request it cannot answer, as
// the project's DomainError ('invalid': placement's 400 envelope, rendered in
// one place by placement's onError), worded exactly as upstream words it.
import { type ErrorCode, invalid } from '../../errors.js';

/** Upstream's error codes for bad allocation-candidates queries (shown from 1.23). */
export type CandidateErrorCode =
  | typeof ErrorCode.QUERY_DUPLICATE_KEY
  | typeof ErrorCode.QUERY_BAD_VALUE
  | typeof ErrorCode.QUERY_MISSING_VALUE;

/** A query-string value that fails upstream's jsonschema or parameter checks. */
export const invalidQuery = (message: string) => invalid(`Invalid query string parameters: ${message}`);

/** Any other bad request (unknown names, conflicting or missing groups). */
export const badCandidateRequest = (message: string, code?: CandidateErrorCode) => invalid(message, code);
