// kafkajs transactions against `passbook serve`: a committed transaction
// read by a read_committed consumer, an aborted one only by a
// read_uncommitted one; offsets sent in a transaction (sendOffsets)
// reaching the group only when it commits; a second producer with the
// same transactional id fencing the first.
// Usage: node txn.js HOST:PORT
'use strict'
const { Kafka, logLevel } = require('kafkajs')
const { check, assert, sleep, summary } = require('./check')

const addr = process.argv[2]
const kafka = new Kafka({ clientId: 'passbook-kafkajs-txn', brokers: [addr], logLevel: logLevel.NOTHING })
const topic = 'kafkajs-txn'

// readAll reads topic from the beginning until an END record it
// produces first (outside any transaction), with or without
// read_committed, and returns the values other than ENDs.
let ends = 0
async function readAll(readUncommitted) {
  const mark = `END-${++ends}`
  const end = kafka.producer()
  await end.connect()
  await end.send({ topic, acks: -1, messages: [{ value: mark }] })
  await end.disconnect()
  const consumer = kafka.consumer({ groupId: `reader-${readUncommitted}-${Date.now()}`, readUncommitted, maxWaitTimeInMs: 200 })
  await consumer.connect()
  await consumer.subscribe({ topics: [topic], fromBeginning: true })
  const got = []
  let done = false
  await consumer.run({ eachMessage: async ({ message }) => {
    const v = message.value.toString()
    if (v === mark) done = true
    else if (!done && !v.startsWith('END-')) got.push(v)
  } })
  for (let waited = 0; waited < 30000 && !done; waited += 100) await sleep(100)
  await consumer.disconnect()
  assert(done, `no END after ${got}`)
  return got
}

async function main() {
  const admin = kafka.admin()
  await admin.connect()
  await admin.createTopics({ topics: [{ topic, numPartitions: 1 }] })
  const producer = kafka.producer({ transactionalId: 'kafkajs', maxInFlightRequests: 1, idempotent: true })
  await producer.connect()

  await check('a transaction committed, one aborted, and one with offsets (sendOffsets)', async () => {
    let txn = await producer.transaction()
    await txn.send({ topic, messages: [{ value: 'c-0' }, { value: 'c-1' }] })
    await txn.commit()
    txn = await producer.transaction()
    await txn.send({ topic, messages: [{ value: 'a-0' }] })
    await txn.sendOffsets({ consumerGroupId: 'kafkajs-etl', topics: [{ topic, partitions: [{ partition: 0, offset: '1' }] }] })
    await txn.abort()
    const none = await admin.fetchOffsets({ groupId: 'kafkajs-etl', topics: [topic] })
    assert(none[0].partitions[0].offset === '-1', `aborted offsets applied: ${JSON.stringify(none)}`)
    txn = await producer.transaction()
    await txn.send({ topic, messages: [{ value: 'o-0' }] })
    await txn.sendOffsets({ consumerGroupId: 'kafkajs-etl', topics: [{ topic, partitions: [{ partition: 0, offset: '2' }] }] })
    await txn.commit()
    const got = await admin.fetchOffsets({ groupId: 'kafkajs-etl', topics: [topic] })
    assert(got[0].partitions[0].offset === '2', `committed offsets: ${JSON.stringify(got)}`)
  })
  await check('read_committed sees the committed transactions only', async () => {
    const got = await readAll(false)
    assert(got.join(',') === 'c-0,c-1,o-0', `read_committed: ${got}`)
  })
  await check('read_uncommitted sees the aborted one too', async () => {
    const got = await readAll(true)
    assert(got.join(',') === 'c-0,c-1,a-0,o-0', `read_uncommitted: ${got}`)
  })
  await check('a second producer with the transactional id fences the first', async () => {
    const zombie = await producer.transaction()
    await zombie.send({ topic, messages: [{ value: 'zombie' }] })
    const fresh = kafka.producer({ transactionalId: 'kafkajs', maxInFlightRequests: 1, idempotent: true })
    await fresh.connect()
    const txn = await fresh.transaction()
    await txn.send({ topic, messages: [{ value: 'fresh' }] })
    await txn.commit()
    let err
    try {
      await zombie.send({ topic, messages: [{ value: 'zombie-again' }] })
      await zombie.commit()
    } catch (e) {
      err = e
    }
    assert(err && /PRODUCER_FENCED|INVALID_PRODUCER_EPOCH|fenced|epoch/i.test(`${err.type} ${err.message}`), `the zombie: ${err && (err.type || err.message)}`)
    await fresh.disconnect()
    const got = await readAll(false)
    assert(!got.includes('zombie') && !got.includes('zombie-again') && got.includes('fresh'), `read_committed: ${got}`)
  })

  await producer.disconnect().catch(() => {})
  await admin.disconnect()
  summary()
}

main().catch(err => {
  console.log(`FAIL unexpected: ${err.stack}`)
  process.exitCode = 1
})
