/**
 * The deployment files, validated without a Docker engine (scripts/validate-compose.sh): docker-compose.yml with a
 * compose client, every variable it reads documented in .env.example, deploy/'s shell syntax, the Dockerfile with
 * hadolint. `npm test`'s pretest installs the compose client and hadolint, so neither check may be skipped.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { HADOLINT_BIN } from '../scripts/lib/prerequisites';

const SCRIPT = path.join(__dirname, '..', 'scripts', 'validate-compose.sh');

test('docker-compose.yml, .env.example, deploy/ and the Dockerfile pass every check, none skipped', () => {
  const env = { ...process.env, PATH: `${HADOLINT_BIN}${path.delimiter}${process.env.PATH ?? ''}` };
  const result = spawnSync('bash', [SCRIPT], { encoding: 'utf8', env, timeout: 120_000 });
  const output = `${result.stdout}${result.stderr}`;
  expect({ status: result.status, output }).toEqual({ status: 0, output: expect.not.stringMatching(/skipped/) });
  expect(output).toMatch(/docker-compose\.yml is valid/);
  expect(output).toMatch(/\.env\.example documents every variable/);
  expect(output).toMatch(/Dockerfile passes hadolint/);
}, 130_000);
