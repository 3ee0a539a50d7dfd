// kafkajs against `passbook serve`: produce 1,000 records and consume
// them back, plus the admin calls passbook serves. Usage: node test.js HOST:PORT
//
// kafkajs's consumer works only in a consumer group, and passbook does
// not serve the group APIs yet, so the records are read back with the
// Fetch request of kafkajs's own broker connection — the code its
// consumer uses to fetch and decode batches.
'use strict'
const { Kafka, logLevel, CompressionTypes } = require('kafkajs')

const addr = process.argv[2]
const kafka = new Kafka({ clientId: 'passbook-kafkajs-test', brokers: [addr], logLevel: logLevel.NOTHING })
let passed = 0
let failed = 0

async function check(name, fn) {
  try {
    await fn()
    passed++
    console.log(`ok   ${name}`)
  } catch (err) {
    failed++
    console.log(`FAIL ${name}: ${err && err.stack ? err.stack : err}`)
  }
}

function assert(cond, msg) {
  if (!cond) throw new Error(msg)
}

const N = 1000
const value = i => `record-${String(i).padStart(7, '0')}-payload`

// A broker connection from kafkajs's own cluster, for raw Fetch.
async function leaderFor(topic) {
  const create = Object.getOwnPropertySymbols(kafka).find(s => s.description === 'private:Kafka:createCluster')
  const cluster = kafka[create]({ allowAutoTopicCreation: false })
  await cluster.connect()
  await cluster.addTargetTopic(topic)
  const leaders = await cluster.findLeaderForPartitions(topic, [0])
  const broker = await cluster.findBroker({ nodeId: Object.keys(leaders)[0] })
  return { broker, cluster }
}

// fetchAll reads partition 0 of topic from offset `from` until `want` records.
async function fetchAll(topic, from, want) {
  const { broker, cluster } = await leaderFor(topic)
  const got = []
  let offset = from
  try {
    while (got.length < want) {
      const resp = await broker.fetch({
        maxWaitTime: 1000,
        topics: [{ topic, partitions: [{ partition: 0, fetchOffset: String(offset), maxBytes: 64 * 1024 }] }],
      })
      const p = resp.responses[0].partitions[0]
      assert(p.errorCode === 0, `fetch error ${p.errorCode}`)
      for (const m of p.messages) {
        if (BigInt(m.offset) < BigInt(offset)) continue // a batch may start before the offset asked for
        got.push(m)
      }
      if (p.messages.length === 0) break
      offset = Number(got[got.length - 1].offset) + 1
    }
  } finally {
    await cluster.disconnect()
  }
  return got
}

function checkRecords(got, from, n) {
  assert(got.length === n, `got ${got.length} records, want ${n}`)
  got.forEach((m, i) => {
    const want = from + i
    assert(Number(m.offset) === want, `record ${i} has offset ${m.offset}, want ${want}`)
    assert(m.value.toString() === value(want), `offset ${want} holds ${m.value}`)
    assert(m.key.toString() === `key-${want}`, `offset ${want} has key ${m.key}`)
  })
}

async function main() {
  const producer = kafka.producer({ allowAutoTopicCreation: true })
  await producer.connect()
  const admin = kafka.admin()
  await admin.connect()

  await check('produce 1,000 records (acks=all, batches of 100, auto-created topic)', async () => {
    let next = 0
    for (let b = 0; b < N / 100; b++) {
      const messages = []
      for (let i = 0; i < 100; i++, next++) messages.push({ key: `key-${next}`, value: value(next) })
      const res = await producer.send({ topic: 'kafkajs', acks: -1, messages })
      assert(res[0].errorCode === 0, `error ${res[0].errorCode}`)
      assert(Number(res[0].baseOffset) === b * 100, `batch ${b} at offset ${res[0].baseOffset}`)
    }
  })
  await check('consume the 1,000 records from offset 0: every offset, key and value', async () => {
    checkRecords(await fetchAll('kafkajs', 0, N), 0, N)
  })
  await check('consume from offset 617', async () => {
    checkRecords(await fetchAll('kafkajs', 617, N - 617), 617, N - 617)
  })
  await check('gzip-compressed batch round trip', async () => {
    const messages = []
    for (let i = 0; i < 100; i++) messages.push({ key: `key-${i}`, value: value(i) })
    await producer.send({ topic: 'kafkajs-gzip', acks: -1, compression: CompressionTypes.GZIP, messages })
    checkRecords(await fetchAll('kafkajs-gzip', 0, 100), 0, 100)
  })
  await check('admin: list offsets (earliest, latest)', async () => {
    const offs = await admin.fetchTopicOffsets('kafkajs')
    assert(offs.length === 1 && offs[0].low === '0' && offs[0].high === String(N), JSON.stringify(offs))
  })
  await check('admin: create, describe configs, list and delete a topic', async () => {
    const created = await admin.createTopics({
      topics: [{ topic: 'kafkajs-admin', numPartitions: 3, configEntries: [{ name: 'retention.ms', value: '86400000' }] }],
    })
    assert(created === true, 'createTopics returned false')
    const md = await admin.fetchTopicMetadata({ topics: ['kafkajs-admin'] })
    assert(md.topics[0].partitions.length === 3, 'not 3 partitions')
    const cfg = await admin.describeConfigs({ resources: [{ type: 2, name: 'kafkajs-admin', configNames: ['retention.ms'] }] })
    const entry = cfg.resources[0].configEntries.find(e => e.configName === 'retention.ms')
    assert(entry && entry.configValue === '86400000', JSON.stringify(cfg.resources[0]))
    await admin.deleteTopics({ topics: ['kafkajs-admin'] })
    const topics = await admin.listTopics()
    assert(!topics.includes('kafkajs-admin'), `still listed: ${topics}`)
  })
  await check('admin: creating an existing topic fails with TOPIC_ALREADY_EXISTS', async () => {
    const created = await admin.createTopics({ topics: [{ topic: 'kafkajs' }] })
    assert(created === false, 'createTopics of an existing topic returned true')
  })

  await producer.disconnect()
  await admin.disconnect()
  console.log(`node: ${passed} passed, ${failed} failed`)
}

main().catch(err => {
  console.log(`FAIL unexpected: ${err.stack}`)
  process.exitCode = 1
})
