import { readFileSync } from 'node:fs';
import path from 'node:path';
import { withMachineTable } from '../src/machine/graph';

test("docs/architecture.md holds the machine's table as the code has it (npm run docs:machine writes it)", () => {
  const doc = readFileSync(path.join(__dirname, '..', 'docs', 'architecture.md'), 'utf8');
  expect(doc).toBe(withMachineTable(doc));
});
