// Debian's uwsgi serving a Python WSGI app over HTTP on localhost: what the
// real Keystone and the real upstream Placement of the tests run under.

export const UWSGI = '/usr/bin/uwsgi';
export const UWSGI_PYTHON3 = '/usr/lib/uwsgi/plugins/python3_plugin.so';

/** uwsgi's first arguments for `wsgiFile` on 127.0.0.1:`port`, with a master process. */
export const uwsgiHttpArgs = (port: number, wsgiFile: string): string[] => [
  '--plugin',
  'python3',
  '--http-socket',
  `127.0.0.1:${port}`,
  // uwsgi's http-socket closes each connection after its answer (as Debian's
  // placement-api-uwsgi.ini says): say so, or a client reusing the connection
  // for a POST fails (RemoteDisconnected, and POSTs are not retried).
  '--add-header',
  'Connection: close',
  '--wsgi-file',
  wsgiFile,
  '--master',
];
