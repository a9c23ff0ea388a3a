// kafkajs over TLS writing a key log through Node's `tls` 'keylog' event: produce N messages one by
// one, then consume them in a group. Usage: node kafkajs_tls_wl.js --port P --out result.json
// --log client.log --keylog keys.log [--topic T] [--messages N] [--max-tls 1.2]
// kafkajs is resolved through NODE_PATH (make_tls_captures.py points it at captures/work/node/node_modules).
'use strict';

const fs = require('fs');
const tls = require('tls');
const { Kafka, logLevel } = require('kafkajs');

function parseArgs(argv) {
  const args = { topic: 'orders', messages: '20' };
  for (let i = 0; i < argv.length; i += 2) args[argv[i].replace(/^--/, '')] = argv[i + 1];
  for (const required of ['port', 'out', 'log', 'keylog']) {
    if (!args[required]) throw new Error(`missing --${required}`);
  }
  return args;
}

function describeBytes(buf) {
  return buf === null || buf === undefined ? null : { len: buf.length, hex: buf.toString('hex'), text: buf.toString() };
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  fs.writeFileSync(args.log, '');
  const maxVersion = args['max-tls'] === '1.2' ? 'TLSv1.2' : 'TLSv1.3';
  // The terminator's certificate is self-signed; the key log line comes from OpenSSL inside Node.
  const socketFactory = ({ host, port, onConnect }) => {
    const socket = tls.connect({ host, port, rejectUnauthorized: false, maxVersion }, onConnect);
    socket.on('keylog', (line) => fs.appendFileSync(args.keylog, line));
    return socket;
  };
  const kafka = new Kafka({
    clientId: 'kafkajs-tls', brokers: [`127.0.0.1:${args.port}`], ssl: true, socketFactory,
    logLevel: logLevel.DEBUG,
    logCreator: () => ({ namespace, level, log }) => fs.appendFileSync(args.log, `${level} ${namespace} ${JSON.stringify(log)}\n`),
  });
  const result = { client: { name: 'kafkajs', version: require('kafkajs/package.json').version, node: process.version,
    tls: args['max-tls'] || '1.3' }, topic: args.topic, produced: [], consumed: [], notes: [] };
  const producer = kafka.producer();
  await producer.connect();
  const n = Number(args.messages);
  for (let i = 0; i < n; i += 1) {
    const key = Buffer.from(`tls-${i}`);
    const value = Buffer.from(`value tls #${i} `.repeat(8));
    const [reply] = await producer.send({ topic: args.topic, acks: -1, messages: [{ key, value, partition: 0 }] });
    result.produced.push({ topic: args.topic, partition: 0, offset: Number(reply.baseOffset),
      key: describeBytes(key), value: describeBytes(value), codec: 'none', acks: -1, delivered: true });
  }
  await producer.disconnect();
  const consumer = kafka.consumer({ groupId: 'kafkajs-tls-group', sessionTimeout: 6000, heartbeatInterval: 2000 });
  await consumer.connect();
  await consumer.subscribe({ topics: [args.topic], fromBeginning: true });
  let done;
  const finished = new Promise((resolve) => { done = resolve; });
  await consumer.run({
    eachMessage: async ({ topic, partition, message }) => {
      result.consumed.push({ topic, partition, offset: Number(message.offset), key: describeBytes(message.key),
        value: describeBytes(message.value) });
      if (result.consumed.length >= n) done();
    },
  });
  await Promise.race([finished, new Promise((resolve) => setTimeout(resolve, 40000).unref())]);
  await consumer.disconnect();
  fs.writeFileSync(args.out, JSON.stringify(result, null, 1));
}

main().catch((err) => { console.error(err); process.exit(1); });
