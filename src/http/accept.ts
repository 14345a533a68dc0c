// Accept negotiation with q-values and wildcards, as webob's acceptable_offers:
// does the client take JSON? (Placement answers an explicit non-JSON Accept
// with a 406, and renders its errors as HTML then.)
export function acceptsJson(accept: string | undefined): boolean {
  if (!accept || !accept.trim()) return true;
  return accept.split(',').some((part) => {
    const [range, ...params] = part
      .trim()
      .split(';')
      .map((s) => s.trim());
    const q = params.find((p) => p.startsWith('q='));
    if (q && Number(q.slice(2)) === 0) return false;
    const r = (range ?? '').toLowerCase();
    return r === '*/*' || r === 'application/*' || r === 'application/json';
  });
}
