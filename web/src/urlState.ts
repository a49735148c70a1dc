// The page state that fits in the URL fragment: #v=1&example=NAME&pass=NAME.
// Versioned so later versions can keep reading old links.

export const URL_STATE_VERSION = 1;

export interface UrlState {
  example: string | null;
  pass: string | null;
}

export function parseUrlState(hash: string): UrlState {
  const params = new URLSearchParams(hash.startsWith("#") ? hash.slice(1) : hash);
  const v = Number(params.get("v") ?? URL_STATE_VERSION);
  if (!Number.isInteger(v) || v < 1 || v > URL_STATE_VERSION) return { example: null, pass: null };
  return { example: params.get("example") || null, pass: params.get("pass") || null };
}

export function formatUrlState(state: UrlState): string {
  const params = new URLSearchParams();
  params.set("v", String(URL_STATE_VERSION));
  if (state.example) params.set("example", state.example);
  if (state.pass) params.set("pass", state.pass);
  return `#${params.toString()}`;
}
