// The release every command reports with --version: package.json's, bundled
// into dist/ by esbuild like any other import.
import packageJson from '../../package.json' with { type: 'json' };

export const VERSION: string = packageJson.version;
