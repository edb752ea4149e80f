// `npm run scenario -- <file-or-folder>…`: runs scenario files against a running Melvin (`npm start`) and prints one
// JSON result per scenario, then "N passed, N failed"; exits non-zero when any failed.
import { existsSync } from 'node:fs';
import { Client, Connection } from '@temporalio/client';
import { z } from 'zod';
import { ScenarioRunner, scenarioFiles } from '../sandbox/scenario-runner';
import { toolDataConverter } from '../src/config/dev-payload-keys';
import { PayloadKeys } from '../src/encryption/payload-codec';
import { DEFAULT_PORTS } from '../harness/stack';

const Env = z.object({
  SANDBOX_CONTROL_URL: z.url().default(`http://127.0.0.1:${DEFAULT_PORTS.intercom}/_sandbox`),
  TEMPORAL_ADDRESS: z.string().min(1).default(`127.0.0.1:${DEFAULT_PORTS.temporal}`),
  TEMPORAL_NAMESPACE: z.string().min(1).default('default'),
  SCENARIO_TIMEOUT_MS: z.coerce.number().int().min(1000).default(180_000),
  MELVIN_PAYLOAD_KEYS: PayloadKeys.optional(),
});

async function main(): Promise<number> {
  const targets = process.argv.slice(2);
  if (targets.length === 0) {
    console.error('Usage: npm run scenario -- <scenario.json | folder>…');
    return 2;
  }
  const missing = targets.filter((t) => !existsSync(t));
  if (missing.length) {
    console.error(`No such file or folder: ${missing.join(', ')}`);
    return 2;
  }
  const env = Env.parse(process.env);
  const connection = await Connection.connect({ address: env.TEMPORAL_ADDRESS });
  try {
    const runner = new ScenarioRunner({
      controlUrl: env.SANDBOX_CONTROL_URL,
      client: new Client({ connection, namespace: env.TEMPORAL_NAMESPACE, dataConverter: toolDataConverter(env) }),
      timeoutMs: env.SCENARIO_TIMEOUT_MS,
    });
    let passed = 0;
    let failed = 0;
    for (const file of scenarioFiles(targets)) {
      const result = await runner.run(file);
      console.log(JSON.stringify(result));
      if (result.passed) passed += 1;
      else failed += 1;
    }
    console.log(`${passed} passed, ${failed} failed`);
    return failed === 0 ? 0 : 1;
  } finally {
    await connection.close();
  }
}

main()
  .then((code) => process.exit(code))
  .catch((err) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  });
