// What posting a task to a worker thread costs the posting thread, by what the task carries:
// nothing but fields, a small buffer cloned or moved, a MessagePort moved (a streamed render's
// port). CPU µs per message (process.cpuUsage, both threads) and wall µs, two rounds.
//   node bench/post-message.mjs [MESSAGES]
import { MessageChannel, Worker } from 'node:worker_threads';

const messages = Number(process.argv[2] ?? 20000);
const worker = new Worker("require('node:worker_threads').parentPort.on('message', () => {});", { eval: true });
const fields = { page: 'island:Greeting', id: 1, url: '/?v=visitor-1', params: {}, variants: {}, arrivedAt: Date.now() };

/** @type {[string, () => [object, any[]]][]} */
const cases = [
  ['fields only', () => [{ ...fields }, []]],
  ['+ 40 B cloned', () => [{ ...fields, propsJson: new Uint8Array(40) }, []]],
  ['+ 40 B moved', () => {
    const props = new Uint8Array(40);
    return [{ ...fields, propsJson: props }, [props.buffer]];
  }],
  ['+ 40 KB moved', () => {
    const props = new Uint8Array(40000);
    return [{ ...fields, propsJson: props }, [props.buffer]];
  }],
  ['+ a MessagePort moved', () => {
    const { port2 } = new MessageChannel();
    return [{ ...fields, port: port2 }, [port2]];
  }],
];

for (const round of [1, 2]) {
  for (const [name, make] of cases) {
    const cpu = process.cpuUsage();
    const start = performance.now();
    for (let i = 0; i < messages; i++) {
      const [message, transfer] = make();
      worker.postMessage(message, transfer);
      // Let the worker drain, as a pool's worker does between tasks.
      if (i % 50 === 0) await new Promise(setImmediate);
    }
    const { user, system } = process.cpuUsage(cpu);
    const wall = (performance.now() - start) * 1000;
    console.log(`round ${round}  ${name.padEnd(24)} CPU ${((user + system) / messages).toFixed(1).padStart(5)} µs  wall ${(wall / messages).toFixed(1).padStart(5)} µs`);
  }
}
await worker.terminate();
