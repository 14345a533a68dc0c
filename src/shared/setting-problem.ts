// Thrown where a setting stops the start (src/entry/settings-check.ts, an extension's own
// settings): the entries print it as one line naming the setting and its fix.

/** A setting that stops the start: what is wrong with it and how to fix it. */
export class SettingProblem extends Error {
  constructor(
    readonly setting: string,
    problem: string,
    readonly fix: string,
  ) {
    super(`${setting}: ${problem}. Fix: ${fix}`);
    this.name = 'SettingProblem';
  }
}
