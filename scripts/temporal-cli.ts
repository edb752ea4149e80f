// `npm run temporal-cli`: prints the path of the Temporal CLI, building it from the Go module proxy when it is missing.
import { findTemporalCli } from '../harness/temporal-cli';

findTemporalCli()
  .then((found) => {
    if (!found) process.exit(3);
    console.log(found);
  })
  .catch((err) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  });
