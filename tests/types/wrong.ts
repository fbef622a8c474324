// Mistakes index.d.ts must catch: tests/npm.test.mjs expects tsc to report each of these lines.
import { createLantern } from 'lantern';

const lantern = await createLantern({ build: 'fast' });
const model = lantern.loadModel({ config: '{}', weights: new Uint8Array(0), precision: 'f16' });
const session = model.createSession({ capture: 7 });
session.probs({ temperature: 'hot' });
const id: string = session.sample();
model.tensor(3);
