// Codes a question names (form numbers, ids): an answer must be about that very code, not about text that merely shares
// a word with the question. Shared by the sandbox model's coverage judgement and the sandbox validation service.

/** A letter-prefixed code ("W-9", "W-8BEN", "app-11") or a bare number of three to six digits ("1099", "8821"). */
const CODE = /(?<![$€£\d.,])\b(?:[a-z]{1,4}-?\d{1,6}[a-z]*|\d{3,6})\b(?![.,]?\d)/gi;
/** Years are dates, not codes: "my 2025 tax form" asks about a form, not about the number 2025. */
const YEAR = /^(19|20)\d\d$/;

/** One form per code, so "W-9" and "w9" compare equal. */
function normalized(code: string): string {
  return code.toLowerCase().replace(/-/g, '');
}

/** The codes a text names, normalized. */
export function keyCodes(text: string): Set<string> {
  return new Set([...text.matchAll(CODE)].map((m) => normalized(m[0])).filter((code) => !YEAR.test(code)));
}

/** The codes of `question` that `text` never names. */
export function codesMissingFrom(question: string, text: string): string[] {
  const named = keyCodes(text);
  return [...keyCodes(question)].filter((code) => !named.has(code));
}
