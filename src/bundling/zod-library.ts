// zod, as one module the worker can preload: every workflow run shares the library instead of evaluating its own copy.
import * as z from 'zod';

// zod sets its default locale on the first schema it builds, in an object the SDK freezes once the preload is done:
// build and use one schema now, so no run ever has to write to the shared library.
z.object({ ready: z.string() }).safeParse({ ready: 0 });

export const zodLibrary = z;
