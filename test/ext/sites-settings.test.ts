// Site mode is not built (docs/sites.md): a start that asks for it stops with
// one line naming the setting; without it nothing changes.
import { describe, expect, it } from 'vitest';
import { checkSettings } from '../../src/entry/settings-check.js';
import { SettingProblem } from '../../src/shared/setting-problem.js';

describe('site settings at start', () => {
  it('refuse PLACEMENT_SITE and PLACEMENT_SITE_PARTITION_AFTER_MS, naming them', () => {
    for (const [name, value] of [
      ['PLACEMENT_SITE', 'site-a'],
      ['PLACEMENT_SITE_PARTITION_AFTER_MS', '5000'],
    ] as const) {
      let thrown: unknown;
      try {
        checkSettings({ [name]: value });
      } catch (err) {
        thrown = err;
      }
      expect(thrown).toBeInstanceOf(SettingProblem);
      expect((thrown as SettingProblem).setting).toBe(name);
      expect((thrown as SettingProblem).message).toMatch(new RegExp(`^${name}: site mode .* not built.*Fix: unset ${name}$`));
    }
  });

  it('change nothing when unset or empty', () => {
    expect(() => checkSettings({})).not.toThrow();
    expect(() => checkSettings({ PLACEMENT_SITE: '' })).not.toThrow();
  });
});
