// kafkajs workload: produce the shared message plan (none and gzip: kafkajs has no built-in snappy, lz4
// or zstd), fetch topic metadata, then consume in a group committing each message.
// Usage: node kafkajs_wl.js --port P --out result.json --log client.log --plan plan.json [--topic T]
// kafkajs is resolved through NODE_PATH (make_captures.py points it at captures/work/node/node_modules).
'use strict';

const fs = require('fs');
const { Kafka, logLevel, CompressionTypes, Partitioners } = require('kafkajs');

const BROKER_HOST = '127.0.0.1';
const SESSION_TIMEOUT_MS = 6000;
const HEARTBEAT_INTERVAL_MS = 2000;
const CODEC = { none: CompressionTypes.None, gzip: CompressionTypes.GZIP };

function parseArgs(argv) {
  const args = { topic: 'orders' };
  for (let i = 0; i < argv.length; i += 2) args[argv[i].replace(/^--/, '')] = argv[i + 1];
  for (const required of ['port', 'out', 'log', 'plan']) {
    if (!args[required]) throw new Error(`missing --${required}`);
  }
  return args;
}

function describeBytes(buf) {
  if (buf === null || buf === undefined) return null;
  const text = new TextDecoder('utf-8', { fatal: true });
  let decoded = null;
  try { decoded = text.decode(buf); } catch (e) { decoded = null; }
  return { len: buf.length, hex: buf.toString('hex'), text: decoded };
}

function describeHeaders(pairs) {
  return pairs.map(([key, value]) => ({ key, value: describeBytes(value) }));
}

function fromHex(hex) { return hex === null ? null : Buffer.from(hex, 'hex'); }

// Each request kafkajs writes is logged as "Request NAME(key: K, version: V)"; count them like the
// Python workloads do.
function requestCounter(logFile) {
  const counts = new Map();
  const logCreator = () => ({ namespace, level, log }) => {
    fs.appendFileSync(logFile, `${level} ${namespace} ${JSON.stringify(log)}\n`);
    const m = /^Request (\w+)\(key: (\d+), version: (\d+)\)/.exec(log.message || '');
    if (!m) return;
    const id = `${m[2]}/${m[3]}/${m[1]}`;
    counts.set(id, (counts.get(id) || 0) + 1);
  };
  const summary = () => [...counts.entries()]
    .map(([id, count]) => {
      const [key, version, name] = id.split('/');
      return { api_key: Number(key), api_name: name, api_version: Number(version), count };
    })
    .sort((a, b) => a.api_key - b.api_key || a.api_version - b.api_version);
  return { logCreator, summary };
}

async function produce(kafka, topic, plan, result) {
  const chosen = new Map();
  // Wrap the default (Java-compatible) partitioner to learn where each message went.
  const createPartitioner = () => {
    const partitioner = Partitioners.DefaultPartitioner();
    return (args) => {
      const partition = partitioner(args);
      chosen.set(args.message, partition);
      return partition;
    };
  };
  for (const codec of Object.keys(CODEC)) {
    const planned = plan.filter((m) => m.codec === codec);
    if (planned.length === 0) continue;
    const messages = planned.map((m) => ({
      key: fromHex(m.key_hex),
      value: fromHex(m.value_hex),
      headers: Object.fromEntries(m.headers.map(([k, v]) => [k, fromHex(v)])),
    }));
    const producer = kafka.producer({ createPartitioner });
    await producer.connect();
    const reply = await producer.send({ topic, acks: -1, compression: CODEC[codec], messages });
    await producer.disconnect();
    const base = new Map(reply.map((r) => [r.partition, BigInt(r.baseOffset)]));
    const seen = new Map();
    messages.forEach((message, i) => {
      const partition = chosen.get(message);
      const index = seen.get(partition) || 0n;
      seen.set(partition, index + 1n);
      result.produced.push({
        topic, partition, offset: Number(base.get(partition) + index),
        key: describeBytes(message.key), value: describeBytes(message.value),
        headers: describeHeaders(planned[i].headers.map(([k, v]) => [k, fromHex(v)])),
        codec, acks: -1, delivered: true, error: null,
      });
    });
  }
}

async function consume(kafka, topic, expected, result) {
  const groupId = 'kafkajs-group';
  result.groups.push({ group_id: groupId, session_timeout_ms: SESSION_TIMEOUT_MS, topics: [topic] });
  const consumer = kafka.consumer({ groupId, sessionTimeout: SESSION_TIMEOUT_MS,
    heartbeatInterval: HEARTBEAT_INTERVAL_MS });
  await consumer.connect();
  await consumer.subscribe({ topics: [topic], fromBeginning: true });
  let done;
  const finished = new Promise((resolve) => { done = resolve; });
  await consumer.run({
    autoCommit: false,
    eachMessage: async ({ topic: t, partition, message }) => {
      result.consumed.push({
        topic: t, partition, offset: Number(message.offset),
        key: describeBytes(message.key), value: describeBytes(message.value),
        headers: describeHeaders(Object.entries(message.headers || {})),
      });
      const next = (BigInt(message.offset) + 1n).toString();
      await consumer.commitOffsets([{ topic: t, partition, offset: next }]);
      result.commits.push({ group_id: groupId, topic: t, partition, offset: Number(next) });
      if (result.consumed.length >= expected) done();
    },
  });
  // unref: the give-up timer must not keep node alive once every message is in
  await Promise.race([finished, new Promise((resolve) => setTimeout(resolve, 40000).unref())]);
  await consumer.disconnect();
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  fs.writeFileSync(args.log, '');
  const plan = JSON.parse(fs.readFileSync(args.plan, 'utf-8'));
  const counter = requestCounter(args.log);
  const kafka = new Kafka({ clientId: 'kafkajs-workload', brokers: [`${BROKER_HOST}:${args.port}`],
    logLevel: logLevel.DEBUG, logCreator: counter.logCreator });
  const result = {
    client: { library: 'kafkajs', version: require('kafkajs/package.json').version, node: process.version },
    topic: args.topic, topics_created: [], produced: [], consumed: [], groups: [], commits: [],
    admin_ops: [], transactions: [], acks0_used: false,
    notes: ['kafkajs ships gzip only; snappy, lz4 and zstd need codec plugins, so they are not used'],
  };
  const admin = kafka.admin();
  await admin.connect();
  const metadata = await admin.fetchTopicMetadata({ topics: [args.topic] });
  result.metadata_requested = { topic: args.topic,
    partitions: metadata.topics[0].partitions.map((p) => p.partitionId).sort() };
  await admin.disconnect();
  await produce(kafka, args.topic, plan, result);
  await consume(kafka, args.topic, plan.length, result);
  result.requests_sent = counter.summary();
  fs.writeFileSync(args.out, JSON.stringify(result, null, 2) + '\n');
}

main().catch((err) => { console.error(err); process.exit(1); });
