// The deployment files, checked statically (no Docker engine here): the compose file against the Compose
// Specification's JSON schema, and every service, port and variable it names against the code, .env.example and the
// docs (docs/configuration.md for variables, docs/operations.md for ports).
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { parse } from 'yaml';
import { CONFIGURATION_VARIABLES } from '../../src/config/environment';
import { BUNDLED_PROMPTS_DIR } from '../../src/activities/prompts';
import { REPORT_PAGE_DIR } from '../../src/ingress/report-page';
import { allSearchAttributes } from '../../src/contract/shared';
import { dynamicConfigFile } from '../../harness/temporal-dynamic-config';
import { describeNeeding } from '../helpers/requirements';
import { COMPOSE_GO } from '../helpers/machine-tools';

const ROOT = path.join(__dirname, '..', '..');
/** The Compose Specification's own schema, from the compose-spec project's Go module (the Go module proxy serves it). */

/** A port in the Compose Specification's long syntax. */
interface LongPort {
  target: number | string;
  published?: number | string;
  host_ip?: string;
}

interface Service {
  image?: string;
  build?: { context: string; dockerfile: string };
  command?: string[];
  environment?: Record<string, string>;
  ports?: (string | number | LongPort)[];
  expose?: string[];
  volumes?: string[];
  healthcheck?: { test: string[] };
  depends_on?: Record<string, { condition: string }>;
}

const composeText = readFileSync(path.join(ROOT, 'docker-compose.yml'), 'utf8');
// Compose resolves YAML merge keys (`<<: *temporal-admin`), so the check does too.
const compose = parse(composeText, { merge: true }) as {
  services: Record<string, Service>;
  volumes?: Record<string, unknown>;
};
const configurationDoc = readFileSync(path.join(ROOT, 'docs', 'configuration.md'), 'utf8');
const operationsDoc = readFileSync(path.join(ROOT, 'docs', 'operations.md'), 'utf8');
const envExample = readFileSync(path.join(ROOT, '.env.example'), 'utf8');
const dockerfile = readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8');

function composeSchema(): object {
  const module = JSON.parse(execFileSync('go', ['mod', 'download', '-json', COMPOSE_GO], { encoding: 'utf8' })) as {
    Dir: string;
  };
  return JSON.parse(readFileSync(path.join(module.Dir, 'schema', 'compose-spec.json'), 'utf8')) as object;
}

// The schema comes through `go mod download`, so this one check needs Go.
describeNeeding(['Go'])('the Compose Specification', () => {
  test('docker-compose.yml is valid under the Compose Specification schema', () => {
    const ajv = new Ajv2020({ allErrors: true, strict: false });
    addFormats(ajv);
    const validate = ajv.compile(composeSchema());
    const valid = validate(compose);
    expect(validate.errors ?? []).toEqual([]);
    expect(valid).toBe(true);
    // The schema does catch mistakes: a misspelt key and a wrong type are both refused.
    const broken = structuredClone(compose) as unknown as { services: Record<string, Record<string, unknown>> };
    broken.services['melvin-worker']!.restart_policy = 'always';
    broken.services['melvin-ingress']!.ports = '8780:8780';
    expect(validate(broken)).toBe(false);
  }, 120_000);

  test('it runs PostgreSQL, the Temporal server with its schema set up, the UI, and Melvin’s worker and ingress', () => {
    const services = compose.services;
    expect(Object.keys(services).sort()).toEqual(
      [
        'melvin-ingress',
        'melvin-worker',
        'postgresql',
        'temporal',
        'temporal-schema',
        'temporal-setup',
        'temporal-ui',
      ].sort(),
    );
    expect(services.temporal!.image).toMatch(/^temporalio\/server:1\.29\./);
    // pgvector for the resolved-conversation index, in a database of its own on the same server.
    expect(services.postgresql!.image).toMatch(/^pgvector\/pgvector:pg1[5-9]$/);
    expect(JSON.stringify(services['temporal-schema'])).toContain('--db melvin_index create-database');
    expect(services['melvin-worker']!.environment!.INDEX_DATABASE_URL).toMatch(
      /^postgres:\/\/.*@postgresql:5432\/melvin_index$/,
    );
    expect(services['temporal-ui']!.image).toMatch(/^temporalio\/ui:/);
    expect(services['temporal-schema']!.image).toMatch(/^temporalio\/admin-tools:/);
    expect(JSON.stringify(services['temporal-schema'])).toContain(
      'update-schema --schema-name postgresql/v12/temporal',
    );
    // Every attribute the workflow upserts, as `temporal operator search-attribute create` names its type.
    const typeNames: Record<string, string> = { KEYWORD: 'Keyword', INT: 'Int' };
    for (const key of allSearchAttributes) {
      expect(JSON.stringify(services['temporal-setup'])).toContain(`${key.name}=${typeNames[key.type]}`);
    }
    expect(services.temporal!.depends_on).toEqual({
      'temporal-schema': { condition: 'service_completed_successfully' },
    });
    for (const name of ['melvin-worker', 'melvin-ingress']) {
      const service = services[name]!;
      expect(service.build).toEqual({ context: '.', dockerfile: 'Dockerfile' });
      expect(service.healthcheck?.test.length).toBeGreaterThan(1);
    }
    expect(services['melvin-worker']!.command).toEqual(['node', 'dist/src/worker.js']);
    expect(services['melvin-ingress']!.command).toEqual(['node', 'dist/src/ingress/main.js']);
  });
});

test('the compose Temporal server runs with the dynamic config every other server Melvin starts runs with', () => {
  const mounted = compose.services.temporal!.environment!.DYNAMIC_CONFIG_FILE_PATH;
  expect(compose.services.temporal!.volumes).toContain(`./deploy/temporal/dynamicconfig.yaml:${mounted}:ro`);
  const file = parse(readFileSync(path.join(ROOT, 'deploy', 'temporal', 'dynamicconfig.yaml'), 'utf8')) as unknown;
  expect(file).toEqual(dynamicConfigFile());
});

test('the Dockerfile is multi-stage and runs as a non-root user with a healthcheck', () => {
  expect(dockerfile.match(/^FROM /gm)).toHaveLength(2);
  expect(dockerfile).toMatch(/^USER melvin$/m);
  expect(dockerfile).toMatch(/^HEALTHCHECK /m);
  expect(dockerfile).toContain('npm run build');
});

test('the runtime image holds the files compiled code reads from the package: the prompts and the report page', () => {
  const copied = [...dockerfile.matchAll(/^COPY --chown=melvin:melvin (\S+) \.\/(\S+)$/gm)].map((m) => [m[1], m[2]]);
  const dir = (absolute: string) => path.relative(ROOT, absolute);
  for (const needed of [dir(BUNDLED_PROMPTS_DIR), dir(REPORT_PAGE_DIR)]) {
    expect({ needed, copied: copied.some(([from, to]) => from === needed && to === needed) }).toEqual({
      needed,
      copied: true,
    });
  }
});

test('every variable Melvin’s services are given is one the code reads and docs/configuration.md documents', () => {
  for (const name of ['melvin-worker', 'melvin-ingress']) {
    for (const variable of Object.keys(compose.services[name]!.environment ?? {})) {
      expect({ service: name, variable, inCode: CONFIGURATION_VARIABLES.includes(variable) }).toEqual({
        service: name,
        variable,
        inCode: true,
      });
      expect({ variable, documented: configurationDoc.includes(`\`${variable}\``) }).toEqual({
        variable,
        documented: true,
      });
    }
  }
});

test('secrets come only from the environment, and .env.example lists every variable the compose file reads', () => {
  const interpolated = [...new Set([...composeText.matchAll(/\$\{([A-Z_]+)[:?}-]/g)].map((m) => m[1]!))].sort();
  const listed = [...envExample.matchAll(/^([A-Z_]+)=/gm)].map((m) => m[1]!).sort();
  expect(listed).toEqual(interpolated);
  for (const service of Object.values(compose.services)) {
    for (const [variable, value] of Object.entries(service.environment ?? {})) {
      if (/KEY|SECRET|TOKEN|PASSWORD|PWD/.test(variable)) {
        expect({ variable, value }).toEqual({ variable, value: expect.stringMatching(/^\$\{[A-Z_]+(:[?-].*)?\}$/) });
      }
    }
  }
});

/** A published port as Docker binds it: the host address (all of them when none is given), host port, container port. */
interface Published {
  hostIp: string;
  published: string;
  target: string;
}

/** Every port a service publishes, in either syntax: `[host_ip:][published:]target[/protocol]`, or the long form. */
function publishedPorts(service: Service): Published[] {
  return (service.ports ?? []).map((port) => {
    if (typeof port === 'object') {
      return {
        hostIp: port.host_ip ?? '0.0.0.0',
        published: String(port.published ?? ''),
        target: String(port.target),
      };
    }
    const spec = String(port).replace(/\/\w+$/, '');
    const ipv6 = /^\[([^\]]+)\]:(.*)$/.exec(spec);
    const parts = ipv6 ? [ipv6[1]!, ...ipv6[2]!.split(':')] : spec.split(':');
    const [hostIp, published, target] =
      parts.length === 3 ? parts : parts.length === 2 ? ['0.0.0.0', ...parts] : ['0.0.0.0', '', ...parts];
    return { hostIp: hostIp!, published: published!, target: target! };
  });
}

const onLoopback = (port: Published) => /^(127\.\d+\.\d+\.\d+|::1|localhost)$/.test(port.hostIp);

test('only the ingress’s webhook port is published beyond this host: Temporal, its UI and the metrics stay on it', () => {
  const beyondHost = Object.entries(compose.services).flatMap(([name, service]) =>
    publishedPorts(service)
      .filter((port) => !onLoopback(port))
      .map((port) => `${name}:${port.target}`),
  );
  expect(beyondHost).toEqual(['melvin-ingress:8780']);
  for (const name of ['temporal', 'temporal-ui']) {
    expect(publishedPorts(compose.services[name]!).map(onLoopback)).toEqual([true]);
  }
  // Every syntax Compose accepts is read, so a port published another way cannot pass as loopback.
  const forms = [
    '7233',
    '7233:7233',
    '0.0.0.0:7233:7233',
    '[::]:7233:7233',
    '127.0.0.1:7233:7233',
    '[::1]:7233:7233/tcp',
  ];
  const longForms = [
    { target: 7233, published: 7233 },
    { target: 7233, published: '7233', host_ip: '127.0.0.1' },
  ];
  expect(publishedPorts({ ports: [...forms, ...longForms] }).map(onLoopback)).toEqual([
    false,
    false,
    false,
    false,
    true,
    true,
    false,
    true,
  ]);
});

test('every published port is documented in docs/operations.md', () => {
  const published = Object.values(compose.services).flatMap((s) => publishedPorts(s).map((p) => p.published));
  expect(published.sort()).toEqual(['7233', '8080', '8780', '9465']);
  for (const port of [...published, '9464'])
    expect({ port, documented: operationsDoc.includes(`| ${port} |`) }).toEqual({ port, documented: true });
});

test('the ingress’s outbox is on a named volume, in a directory the image gives its non-root user', () => {
  const ingress = compose.services['melvin-ingress']!;
  const outboxDir = /^\$\{INGRESS_OUTBOX_DIR-(.+)\}$/.exec(String(ingress.environment!.INGRESS_OUTBOX_DIR))?.[1];
  expect(outboxDir).toBe('/var/lib/melvin/outbox');
  const [volume] = (ingress.volumes ?? []).filter((v) => v.endsWith(`:${outboxDir}`));
  expect(volume).toBeDefined();
  // A named volume (declared at the top level), not a path on the host: it outlives the container.
  expect(Object.keys(compose.volumes ?? {})).toContain(volume!.split(':')[0]);
  expect(dockerfile).toContain(`mkdir -p ${outboxDir} && chown melvin:melvin ${outboxDir}`);
  expect(dockerfile.indexOf(`chown melvin:melvin ${outboxDir}`)).toBeLessThan(dockerfile.indexOf('USER melvin'));
});
