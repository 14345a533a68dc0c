// Limits on request URLs, shared by both APIs (the Node server raises its
// header limit above MAX_URL_LENGTH so that the app, not the HTTP parser,
// answers long URLs in the API's envelope).

/** Long enough for member_of=in: lists of ~1700 aggregates. */
export const MAX_URL_LENGTH = 64 * 1024;

/**
 * A percent-encoded C0 control character or DEL ("%00") in the path or query,
 * or null. Raw ones never get this far: URL parsing encodes them. Like control
 * characters in bodies, they are refused rather than stored cut.
 */
export function controlCharacterInUrl(url: string): string | null {
  return /%(?:[01][0-9a-f]|7f)/i.exec(url)?.[0] ?? null;
}

/** "U+0000" for "%00". */
export const codePointOfEscape = (escaped: string) => `U+00${escaped.slice(1).toUpperCase()}`;
