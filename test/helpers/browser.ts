// Browser tests' helpers: Debian's Chromium through playwright-core, and text looked for in every frame of a page.
import type { Page } from 'playwright-core';
import { waitFor } from './runtime';

/** Waits until `text` shows in the page or one of its frames (the Temporal UI renders Markdown in frames of its own). */
export async function textInSomeFrame(page: Page, text: string, timeoutMs?: number): Promise<void> {
  await waitFor(
    `"${text}" on the page`,
    async () => {
      for (const frame of page.frames()) {
        const body = await frame
          .locator('body')
          .innerText()
          .catch(() => '');
        if (body.includes(text)) return true;
      }
      return false;
    },
    { timeoutMs },
  );
}
