// The one workerd module these tests import; typed narrowly here so the
// project's tsconfig needs no Workers globals (which clash with Node's).
declare module 'cloudflare:workers' {
  export const exports: unknown;
  export const env: unknown;
}
