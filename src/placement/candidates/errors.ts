// The one error the candidates engine throws: a request it cannot answer,
// worded exactly as upstream placement words it. The route turns it into
// placement's 400 envelope; the engine itself knows nothing of HTTP.

/** Upstream's error codes for bad allocation-candidates queries (shown from 1.23). */
export type CandidateErrorCode = 'placement.query.duplicate_key' | 'placement.query.bad_value' | 'placement.query.missing_value';

export class CandidateRequestError extends Error {
  constructor(message: string, readonly code?: CandidateErrorCode) {
    super(message);
    this.name = 'CandidateRequestError';
  }
}

/** A query-string value that fails upstream's jsonschema or parameter checks. */
export const invalidQuery = (message: string) => new CandidateRequestError(`Invalid query string parameters: ${message}`);

/** Any other bad request (unknown names, conflicting or missing groups). */
export const badCandidateRequest = (message: string, code?: CandidateErrorCode) => new CandidateRequestError(message, code);
