// Codes a question names (form numbers, ids), as the sandbox model reads them: a passage answers only when it names the
// very code asked about, not when it merely shares a word with the question. The validation service reads subjects its
// own way (sandbox/validation/checks.ts), so a mistake here is not hidden by the same mistake there.

/**
 * A letter-prefixed code ("W-9", "W-8BEN", "app-11"), or a number the word "form" goes with ("Form 8821", "1099 form").
 * A bare number is not a code: a zip code, a phone number or hours worked say something about the talent, not what they
 * ask about; nor is a code after a reference word ("ticket T-4821"), which points at a message, not at a subject.
 */
const CODE =
  /(?<![$€£\d.,])(?<!\b(?:ticket|case|ref|reference|order|invoice|no\.?|number|#)\s*#?\s*)\b(?:[a-z]{1,4}-?\d{1,6}[a-z]*|(?<=\bforms?\s+#?)\d{3,6}|\d{3,6}(?=\s+(?:tax\s+)?forms?\b))\b(?![.,]?\d)/gi;
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
