// Site mode's settings (docs/sites.md): a combination that cannot work stops
// the start with one line naming the setting; without PLACEMENT_SITE nothing changes.
import { describe, expect, it } from 'vitest';
import { checkSettings } from '../../src/entry/settings-check.js';
import { siteSettings } from '../../src/ext/sites/settings.js';
import { SettingProblem } from '../../src/shared/setting-problem.js';

const SITE = {
  PLACEMENT_SITE: 'site-a',
  PLACEMENT_SITE_DB_PATH: '/tmp/site-a.db',
  PLACEMENT_DB_URL: 'http://127.0.0.1:8080',
  PLACEMENT_WORKERS: '1',
};

function refusal(env: Record<string, string>): SettingProblem {
  let thrown: unknown;
  try {
    checkSettings(env);
  } catch (err) {
    thrown = err;
  }
  expect(thrown).toBeInstanceOf(SettingProblem);
  return thrown as SettingProblem;
}

describe('site settings at start', () => {
  it('refuse what cannot work, naming the setting', () => {
    const cases: [Record<string, string>, string, RegExp][] = [
      [{ PLACEMENT_SITE_PARTITION_AFTER_MS: '5000' }, 'PLACEMENT_SITE_PARTITION_AFTER_MS', /PLACEMENT_SITE is not set/],
      [{ ...SITE, PLACEMENT_SITE: 'no spaces' }, 'PLACEMENT_SITE', /not a site name/],
      [{ ...SITE, PLACEMENT_DB_URL: 'file:/tmp/x.db' }, 'PLACEMENT_DB_URL', /primary as a libSQL server/],
      [{ ...SITE, PLACEMENT_SITE_DB_PATH: '' }, 'PLACEMENT_SITE_DB_PATH', /local libSQL file/],
      [{ ...SITE, PLACEMENT_WORKERS: '0' }, 'PLACEMENT_WORKERS', /one server process/],
      [{ ...SITE, PLACEMENT_SITE_PARTITION_AFTER_MS: 'soon' }, 'PLACEMENT_SITE_PARTITION_AFTER_MS', /whole number/],
      [{ ...SITE, PLACEMENT_SITE_LOW_WATERMARK: '2' }, 'PLACEMENT_SITE_LOW_WATERMARK', /fraction/],
      [{ ...SITE, PLACEMENT_SITE_LOW_WATERMARK: '0.8', PLACEMENT_SITE_HIGH_WATERMARK: '0.5' }, 'PLACEMENT_SITE_LOW_WATERMARK', /not below/],
    ];
    for (const [env, setting, problem] of cases) {
      const err = refusal(env);
      expect(err.setting, JSON.stringify(env)).toBe(setting);
      expect(err.message).toMatch(problem);
      expect(err.message).toMatch(/Fix: /);
    }
  });

  it('take a site with its defaults', () => {
    expect(() => checkSettings(SITE)).not.toThrow();
    expect(siteSettings({ ...SITE, PLACEMENT_WORKERS: 1 })).toEqual({
      site: 'site-a',
      dbPath: '/tmp/site-a.db',
      partitionAfterMs: 5000,
      probeMs: 1000,
      lowWatermark: 0.25,
      highWatermark: 0.75,
      rebalanceStep: 0,
      limitsOn: false,
    });
  });

  it('change nothing when unset or empty', () => {
    expect(() => checkSettings({})).not.toThrow();
    expect(() => checkSettings({ PLACEMENT_SITE: '' })).not.toThrow();
    expect(siteSettings({})).toBeNull();
  });
});
