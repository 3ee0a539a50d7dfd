// kafkajs against `passbook serve`: produce 1,000 records and consume
// them back with consumer groups, two members sharing a topic, offsets
// set and read by the admin client, plus the admin calls passbook serves.
// Usage: node test.js HOST:PORT
'use strict'
const { Kafka, logLevel, CompressionTypes } = require('kafkajs')
const { check, assert, sleep, summary } = require('./check')

const addr = process.argv[2]
const kafka = new Kafka({ clientId: 'passbook-kafkajs-test', brokers: [addr], logLevel: logLevel.NOTHING })
const N = 1000
const value = i => `record-${String(i).padStart(7, '0')}-payload`


// consumeGroup runs one member of groupId on topic until `want` messages
// arrived (or `ms` passed), disconnects it (which commits), and returns
// them in arrival order.
async function consumeGroup(groupId, topic, want, ms = 30000) {
  const consumer = kafka.consumer({ groupId, heartbeatInterval: 300, maxWaitTimeInMs: 500 })
  await consumer.connect()
  await consumer.subscribe({ topics: [topic], fromBeginning: true })
  const got = []
  await consumer.run({ eachMessage: async ({ partition, message }) => { got.push({ partition, ...message }) } })
  for (let waited = 0; waited < ms && got.length < want; waited += 100) await sleep(100)
  await consumer.disconnect()
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
  await check('consumer group: the 1,000 records from the beginning, every offset, key and value', async () => {
    checkRecords(await consumeGroup('kafkajs-all', 'kafkajs', N), 0, N)
  })
  await check('consumer group: resumes after its commits (a second run gets nothing old)', async () => {
    const got = await consumeGroup('kafkajs-all', 'kafkajs', 1, 3000)
    assert(got.length === 0, `a second run got ${got.length} records again`)
    const offs = await admin.fetchOffsets({ groupId: 'kafkajs-all', topics: ['kafkajs'] })
    assert(offs[0].partitions[0].offset === String(N), JSON.stringify(offs))
  })
  await check('admin: setOffsets to 617, then the group consumes from there', async () => {
    await admin.setOffsets({ groupId: 'kafkajs-617', topic: 'kafkajs', partitions: [{ partition: 0, offset: '617' }] })
    checkRecords(await consumeGroup('kafkajs-617', 'kafkajs', N - 617), 617, N - 617)
  })
  await check('gzip-compressed batch round trip', async () => {
    const messages = []
    for (let i = 0; i < 100; i++) messages.push({ key: `key-${i}`, value: value(i) })
    await producer.send({ topic: 'kafkajs-gzip', acks: -1, compression: CompressionTypes.GZIP, messages })
    checkRecords(await consumeGroup('kafkajs-gzip', 'kafkajs-gzip', 100), 0, 100)
  })
  await check('two members of one group split 4 partitions and consume 1,000 records once; offsets committed', async () => {
    await admin.createTopics({ topics: [{ topic: 'kafkajs-shared', numPartitions: 4 }] })
    const members = [0, 1].map(() => kafka.consumer({ groupId: 'kafkajs-shared', heartbeatInterval: 300, maxWaitTimeInMs: 500 }))
    const got = [[], []]
    const assigned = [new Set(), new Set()]
    for (const [i, m] of members.entries()) {
      await m.connect()
      await m.subscribe({ topics: ['kafkajs-shared'], fromBeginning: true })
      await m.run({ eachMessage: async ({ partition, message }) => { got[i].push({ partition, ...message }); assigned[i].add(partition) } })
    }
    // Both members in a stable group before the records arrive.
    for (let i = 0; i < 300; i++) {
      const { groups } = await admin.describeGroups(['kafkajs-shared'])
      if (groups[0].state === 'Stable' && groups[0].members.length === 2) break
      await sleep(100)
    }
    const messages = []
    for (let i = 0; i < N; i++) messages.push({ key: `key-${i}`, value: value(i) })
    await producer.send({ topic: 'kafkajs-shared', acks: -1, messages })
    for (let i = 0; i < 300 && got[0].length + got[1].length < N; i++) await sleep(100)
    const { groups } = await admin.describeGroups(['kafkajs-shared'])
    for (const m of members) await m.disconnect()
    const all = got[0].concat(got[1]).map(m => m.value.toString())
    assert(all.length === N && new Set(all).size === N, `${all.length} messages, ${new Set(all).size} distinct`)
    assert(got[0].length > 0 && got[1].length > 0, `one member got nothing: ${got[0].length}, ${got[1].length}`)
    for (const p of assigned[0]) assert(!assigned[1].has(p), `partition ${p} consumed by both members`)
    assert(groups[0].members.length === 2 && groups[0].protocol !== '', JSON.stringify(groups[0]))
    const offs = await admin.fetchOffsets({ groupId: 'kafkajs-shared', topics: ['kafkajs-shared'] })
    const committed = offs[0].partitions.reduce((sum, p) => sum + Number(p.offset), 0)
    assert(committed === N, `committed offsets add up to ${committed}, want ${N}`)
    console.log(`     member 1: partitions ${[...assigned[0]].sort()} (${got[0].length} records), member 2: ${[...assigned[1]].sort()} (${got[1].length})`)
  })
  await check('admin: listGroups, describeGroups, deleteGroups', async () => {
    const { groups } = await admin.listGroups()
    const ids = groups.map(g => g.groupId)
    for (const id of ['kafkajs-all', 'kafkajs-617', 'kafkajs-shared']) assert(ids.includes(id), `${id} not listed: ${ids}`)
    const described = await admin.describeGroups(['kafkajs-all'])
    assert(described.groups[0].state === 'Empty', JSON.stringify(described.groups[0]))
    await admin.deleteGroups(['kafkajs-all'])
    const offs = await admin.fetchOffsets({ groupId: 'kafkajs-all', topics: ['kafkajs'] })
    assert(offs[0].partitions[0].offset === '-1', `offsets left after deleteGroups: ${JSON.stringify(offs)}`)
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
  summary()
}

main().catch(err => {
  console.log(`FAIL unexpected: ${err.stack}`)
  process.exitCode = 1
})
