"""systems/*/validity.yaml: format, and each pattern against real log lines (docs/validity.md).

Every positive sample is a line the published code prints, rebuilt from the
format string named in the comment (the snapshot in ../shared/upstream/); every
negative sample is a line of a healthy run. Each pattern must match at least
one positive sample of its own and none of the healthy lines of its system
(the healthy lines of a base system count for the systems that extend it).
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from harness import validity
from harness.deploy import role_dir

ROOT = Path(__file__).resolve().parents[2]
SYSTEMS = ROOT / "systems"
FILES = sorted(SYSTEMS.glob("*/validity.yaml"))
PARAMETERS = yaml.safe_load((ROOT / "harness" / "parameters.yaml").read_text())

REQUIRED = {"name", "regex", "meaning", "unexpected"}
OPTIONAL = {"planned_by", "lines_per_mutation", "stop_effect", "components", "components_except", "fatal"}
F12 = "2026-11-24 10:00:00.000 UTC"          # common/flogging/logging.go:31 time format (1.1, 1.2, FastFabric)
F06 = "10:00:00.000"                          # fabric-0.6.1 flogging/logging.go:94 time format
#: v2.x/v3.x: fabric-lib-go common/flogging/global.go:17 defaultFormat (time, sequence id, level), as v3.1.5 vendors it
F31 = "2026-11-24 10:00:00.000 UTC 002a INFO"

# (system, pattern name) -> lines the published code prints for that failure class.
POSITIVE = {
    # fabric-1.2.0 core/common/validation/msgvalidation.go:401 + msp/mgmt/mgmt.go:70 wrapped at :169
    ("fabric-1.2", "bad_creator_signature"): [
        f"{F12} [protoutils] ValidateTransaction -> ERRO 0a1 checkSignatureFromCreator returns err MSP error: channel doesn't exist",
        # core/ledger/kvledger/txmgmt/validator/valimpl/helper.go:108
        f"{F12} [valimpl] preprocessProtoBlock -> WARN 0a2 Channel [mychannel]: Block [5] Transaction index [0] TxId [4f2a] "
        "marked as invalid by committer. Reason code [BAD_CREATOR_SIGNATURE]",
    ],
    ("fabric-1.2", "msp_channel_missing"): [
        f"{F12} [protoutils] ValidateTransaction -> ERRO 0a1 checkSignatureFromCreator returns err MSP error: channel doesn't exist",
        # msgvalidation.go:163
        f"{F12} [protoutils] ValidateTransaction -> ERRO 0a1 checkSignatureFromCreator returns err could not get msp for channel [mychannel]",
    ],
    # msgvalidation.go:176-186
    ("fabric-1.2", "msp_error"): [
        f"{F12} [protoutils] ValidateTransaction -> ERRO 0a1 checkSignatureFromCreator returns err "
        "creator's signature over the proposal is not valid: The signature is invalid",
        f"{F12} [protoutils] ValidateTransaction -> ERRO 0a1 checkSignatureFromCreator returns err MSP error: "
        "could not deserialize a SerializedIdentity: proto: bad wiretype",
    ],
    # core/committer/txvalidator/validator.go:299
    ("fabric-1.2", "invalid_transaction"): [
        f"{F12} [committer/txvalidator] validateTx -> ERRO 0a3 Invalid transaction with index 7",
    ],
    # core/handlers/validation/builtin/validation_logic.go:122 and :127 through txvalidator/validator.go:358
    ("fabric-1.2", "endorsement_policy_failure"): [
        f"{F12} [vscc] Validate -> WARN 0b0 Endorsement policy failure for transaction txid=4f2a, err: "
        "signature set did not satisfy policy",
        f"{F12} [committer/txvalidator] validateTx -> ERRO 0b1 VSCCValidateTx for transaction txId = 4f2a returned error: "
        "VSCC error: endorsement policy failure, err: signature set did not satisfy policy",
    ],
    # txvalidator/validator.go:358 with vscc_validator.go:190; validation_logic.go:102
    ("fabric-1.2", "vscc_error"): [
        f"{F12} [committer/txvalidator] validateTx -> ERRO 0b2 VSCCValidateTx for transaction txId = 4f2a returned error: "
        "chaincode mycc:1.0/mychannel didn't match mycc:2.0/mychannel in lscc",
        f"{F12} [vscc] Validate -> ERRO 0b3 VSCC error: GetTransaction failed, err proto: bad wiretype",
    ],
    # statebasedval/state_based_validator.go:114 (1.2 and FastFabric :173), FastFabric :210 (no TxId)
    ("fabric-1.2", "mvcc_read_conflict"): [
        f"{F12} [statebasedval] ValidateAndPrepareBatch -> WARN 0c0 Block [5] Transaction index [3] TxId [4f2a] "
        "marked as invalid by state validator. Reason code [MVCC_READ_CONFLICT]",
        f"{F12} [statebasedval] ValidateAndPrepareBatchByNo -> WARN 0c1 Block [5] Transaction index [3] "
        "marked as invalid by state validator. Reason code [PHANTOM_READ_CONFLICT]",
    ],
    # txvalidator/validator.go:256 (go-logging Fprintln: spaces between arguments) and :336
    ("fabric-1.2", "duplicate_txid"): [
        f"{F12} [committer/txvalidator] markTXIdDuplicates -> ERRO 0d0 Duplicate txid 4f2a found, skipping",
        f"{F12} [committer/txvalidator] validateTx -> ERRO 0d1 Duplicate transaction found,  4f2a , skipping",
    ],
    # valimpl/helper.go:108 and :151
    ("fabric-1.2", "invalid_other"): [
        f"{F12} [valimpl] preprocessProtoBlock -> WARN 0e0 Channel [mychannel]: Block [5] Transaction index [1] TxId [4f2a] "
        "marked as invalid by committer. Reason code [BAD_PAYLOAD]",
        f"{F12} [valimpl] preprocessProtoBlock -> WARN 0e1 Channel [mychannel]: Block [5] Transaction index [1] TxId [4f2a] "
        "marked as invalid. Reason code [INVALID_WRITESET]. Message: [bad key]",
    ],
    # txvalidator/validator.go:321
    ("fabric-1.2", "channel_not_found"): [
        f"{F12} [committer/txvalidator] validateTx -> ERRO 0e2 Dropping transaction for non-existent channel otherchannel",
    ],
    # orderer/common/broadcast/broadcast.go:113
    ("fabric-1.2", "orderer_rejected_broadcast"): [
        f"{F12} [orderer/common/broadcast] Handle -> WARN 0f0 [channel: mychannel] Rejecting broadcast of normal message "
        "from 127.0.0.1:51234 because of error: implicit policy evaluation failed",
    ],
    # Go runtime (runtime/panic.go printpanics, runtime.throw); go-logging Panicf at CRITICAL
    ("fabric-1.2", "go_panic"): [
        "panic: Error during commit to txmgr:leveldb: closed",
        "fatal error: concurrent map writes",
        f"{F12} [deliverclient] commitBlocks -> CRIT 1a0 Cannot commit block to the ledger due to ...",
    ],
    # --- fabric-3.1 (hyperledger/fabric v3.1.5; fabric-2.5 takes these rules): lines of this repository's
    # v3.1.5 runs (control points of table1-today-*, a BFT smoke) where the failure happened, else the
    # source's format string with F31's prefix ---
    # core/common/validation/msgvalidation.go:276; batch_preparer.go:217-218
    ("fabric-3.1", "bad_creator_signature"): [
        f"{F31} [protoutils] ValidateTransaction -> checkSignatureFromCreator returns err the supplied identity is not valid",
        f"{F31} [validation] preprocessProtoBlock -> Channel [mychannel]: Block [5] Transaction index [0] TxId [4f2a] "
        "marked as invalid by committer. Reason code [BAD_CREATOR_SIGNATURE]",
    ],
    # core/committer/txvalidator/v20/validator.go:330
    ("fabric-3.1", "invalid_transaction"): [f"{F31} [committer.txvalidator] validateTx -> Invalid transaction with index 3"],
    # real: a control point's forged endorsement (4 lines)
    ("fabric-3.1", "endorsement_policy_failure"): [
        "2026-11-28 16:46:05.172 UTC 2fdc WARN [vscc] Validate -> Endorsment policy failure error=\"validation of endorsement "
        "policy for chaincode money-transfer in tx 43:3 failed: implicit policy evaluation failed - 0 sub-policies were satisfied\"",
        "2026-11-28 16:01:42.836 UTC 2fd9 ERRO [vscc] Validate -> VSCC error: stateBasedValidator.Validate failed, err validation "
        "of endorsement policy for chaincode money-transfer in tx 43:23 failed: implicit policy evaluation failed",
        "2026-11-28 16:01:42.836 UTC 2fda ERRO [committer.txvalidator] validateTx -> Dispatch for transaction txId = 87b52f50 "
        "returned error: validation of endorsement policy for chaincode money-transfer in tx 43:23 failed: implicit policy",
        "2026-11-28 16:46:05.246 UTC 2ff1 WARN [validation] preprocessProtoBlock -> Channel [mychannel]: Block [43] Transaction "
        "index [1] TxId [b0e4009e] marked as invalid by committer. Reason code [ENDORSEMENT_POLICY_FAILURE]",
    ],
    # core/committer/txvalidator/v20/validator.go:375; core/handlers/validation/builtin/v20/validation_logic.go:117
    ("fabric-3.1", "vscc_error"): [
        f"{F31} [committer.txvalidator] validateTx -> Dispatch for transaction txId = 4f2a returned error: "
        "could not retrieve ledger for channel mychannel",
        f"{F31} [vscc] Validate -> VSCC error: GetEnvelope failed, err proto: bad wiretype",
    ],
    # real: a control point's stale read
    ("fabric-3.1", "mvcc_read_conflict"): [
        "2026-11-28 16:46:05.391 UTC 3000 WARN [validation] validateAndPrepareBatch -> Block [44] Transaction index [45] TxId "
        "[0922d1a2] marked as invalid by state validator. Reason code [MVCC_READ_CONFLICT]",
    ],
    # real: a BFT smoke whose lifecycle approval was ordered twice (validator.go:474)
    ("fabric-3.1", "duplicate_txid"): [
        "2026-11-28 17:28:14.350 UTC 0097 ERRO [committer.txvalidator] checkTxIdDupsLedger -> Duplicate transaction found,  "
        "00fffabb67b40d88 , skipping",
    ],
    ("fabric-3.1", "invalid_other"): [
        f"{F31} [validation] preprocessProtoBlock -> Channel [mychannel]: Block [5] Transaction index [1] TxId [4f2a] "
        "marked as invalid by committer. Reason code [BAD_PAYLOAD]",
    ],
    ("fabric-3.1", "channel_not_found"): [
        f"{F31} [committer.txvalidator] validateTx -> Dropping transaction for non-existent channel otherchannel",
    ],
    # real: a control point's bad creator, refused by the orderer
    ("fabric-3.1", "orderer_rejected_broadcast"): [
        "2026-11-28 16:46:05.094 UTC 00dc WARN [orderer.common.broadcast] ProcessMessage -> [channel: mychannel] Rejecting "
        "broadcast of normal message from 127.0.0.1:43786 because of error: implicit policy evaluation failed",
        f"{F31} [orderer.common.broadcast] ProcessMessage -> [channel: mychannel] Rejecting broadcast of message from "
        "127.0.0.1:43786 with SERVICE_UNAVAILABLE: rejected by Consenter: no leader",
    ],
    ("fabric-3.1", "go_panic"): [
        "panic: runtime error: invalid memory address or nil pointer dereference",
        "fatal error: concurrent map writes",
        "2026-11-24 10:00:00.000 UTC 0031 PANI [orderer.common.server] Main -> Failed validating bootstrap block",
        "2026-11-24 10:00:00.000 UTC 0031 FATA [orderer.common.server] Main -> Failed to listen",
    ],
    # --- fastfabric (cgorenflo/fabric @ fastfabric) ---
    # fabric_extension/persistence/ledger/kvledger/txmgmt/validator/statebasedval/state_based_validator.go:173/:210
    ("fastfabric", "mvcc_read_conflict"): [
        f"{F12} [statebasedval] ValidateAndPrepareBatchByNo -> WARN 0c1 Block [5] Transaction index [3] "
        "marked as invalid by state validator. Reason code [MVCC_READ_CONFLICT]",
    ],
    # vendor/github.com/fabric_extension/persistence/ledger/kvledger/txmgmt/validator/statebasedval/state_based_validator.go:39
    ("fastfabric", "storage_replay_mvcc"): [
        f"{F12} [statebasedval] ValidateAndPrepareBatch -> WARN 2b0 Block [12] Transaction index [99] TxId [4f2a] "
        "marked as invalid by state validator. Reason code [MVCC_READ_CONFLICT]",
    ],
    # orderer/common/server/main/perf_deliverclient.go:278 (sic "sequnce")
    ("fastfabric", "block_verify_failed"): [
        f"{F12} [deliverclient] func1 -> ERRO 0a1 [test] Error verifying block with sequnce number 7, due to "
        "Header.DataHash is different from Hash(block.Data) for block with id [7] on channel [test]",
    ],
    # perf_deliverclient.go:307
    ("fastfabric", "commit_failed"): [
        f"{F12} [deliverclient] commitBlocks -> CRIT 0a2 Cannot commit block to the ledger due to block number mismatch",
    ],
    # core/ledger/kvledger/example/experiment.go:193 (log.Fatal: Sprint) and :178; perf_deliverclient.go:347 (Println)
    ("fastfabric", "balance_mismatch"): [
        "2026/11/24 10:00:00 Account 3 has balance 1, should be 0",
        "Account  3  has balance  1 , should be  0",
        "2026/11/24 10:00:00 Not all accounts setup. Expected 200000 , actual 0",
    ],
    # perf_deliverclient.go:262
    ("fastfabric", "second_genesis"): ["this should happen only once"],
    # --- validation-opt (fabric-1.1.0) ---
    # core/ledger/util/couchdb/couchdb.go:415
    ("validation-opt", "couchdb_unreachable"): [
        f"{F12} [couchdb] CreateConnectionDefinition -> ERRO 0a1 Unable to connect to CouchDB,  error: json: cannot "
        "unmarshal string into Go struct field DBInfo.purge_seq of type int   Check the admin username and password.",
    ],
    # couchdb.go:1617
    ("validation-opt", "couchdb_retry"): [
        f"{F12} [couchdb] handleRequest -> WARN 0a2 Retrying couchdb request in 125ms. Attempt:1  Error:Get "
        "http://127.0.0.1:5984/mychannel_: dial tcp 127.0.0.1:5984: connect: connection refused",
    ],
    # couchdb.go:1502
    ("validation-opt", "couchdb_revision_conflict"): [
        f"{F12} [couchdb] SaveDoc -> WARN 0a3 CouchDB document revision conflict detected, retrying. Attempt:1",
    ],
    # --- fujitsu-api (fabric-0.6.1) ---
    # consensus/pbft/pbft-core.go:645
    ("fujitsu-api", "pbft_out_of_sequence_numbers"): [
        f"{F06} [consensus/pbft] sendPrePrepare -> WARN 1c2 Primary 0 not sending pre-prepare for batch "
        "2f5b0a1c - out of sequence numbers",
    ],
    # consensus/pbft/viewchange.go:176
    ("fujitsu-api", "pbft_view_change"): [
        f"{F06} [consensus/pbft] sendViewChange -> INFO 1c3 Replica 2 sending view-change, v:1, h:40, |C|:2, |P|:3, |Q|:3",
    ],
    # consensus/pbft/pbft-core.go:1089, :1002
    ("fujitsu-api", "pbft_replica_out_of_date"): [
        f"{F06} [consensus/pbft] witnessCheckpointWeakCert -> WARN 1c4 Replica 3 is out of date, f+1 nodes agree "
        "checkpoint with seqNo 80 exists but our high water mark is 60",
    ],
    # consensus/pbft/pbft-core.go:1184
    ("fujitsu-api", "pbft_checkpoint_divergence"): [
        f"{F06} [consensus/pbft] witnessCheckpointWeakCert -> CRIT 1c5 Network unable to find stable certificate "
        "for seqNo 40 (3 different values observed already)",
    ],
    # core/chaincode/handler.go:306, :354
    ("fujitsu-api", "chaincode_stream_error"): [
        f"{F06} [chaincode] processStream -> ERRO 1c6 Error handling chaincode support stream: rpc error: code = 1 desc = context canceled",
        f"{F06} [chaincode] processStream -> ERRO 1c7 [4f2a0b1c]Error handling message, ending stream: bad state",
    ],
    # workloads/chaincode_example02/client.py (ours): SystemExit messages
    ("fujitsu-api", "client_refused_or_short"): [
        "12 of 500 invokes were refused by the REST API",
        "only 480 of 500 transfers committed within 120 s",
    ],
    ("fujitsu-api", "go_panic"): ["panic: [ExecuteTransactions]Chain default not found"],
    # --- fabric-x (fabric-x-committer v1.0.4; our configs' log format, systems/fabric-x/validity.yaml) ---
    ("fabric-x", "go_panic"): [
        "panic: runtime error: invalid memory address or nil pointer dereference",
        "2026-12-07 21:40:06.907 UTC [coordinator] Run -> FATA failed to start the dependency graph",
        # Arma v1.0.5's own format (coloured level after a sequence number)
        "\x1b[35m2026-12-08 00:22:36.617 UTC 0004 FATA\x1b[0m [Assembler1] \x1b[35;1mNewAssembler\x1b[0m -> failed to open ledger",
    ],
    # PostgreSQL 15 (src/backend/utils/error/elog.c, log_line_prefix '%m [%p] ')
    ("fabric-x", "postgres_fatal"): [
        '2026-12-07 21:38:38.625 UTC [22585] FATAL:  role "root" does not exist',
        "2026-12-07 21:40:06.907 UTC [25877] PANIC:  could not write to file \"pg_wal/xlogtemp.25877\": No space left on device",
    ],
    # --- bftsmart-orderer (fabric-orderingservice release-1.2; logback pattern of config/logback.xml) ---
    # src/bft/BFTNode.java:603, :482
    ("bftsmart-orderer", "node_envelope_error"): [
        "2026-11-24 10:00:00.000 [Thread-4] ERROR bft.BFTNode - Failed to process envelope",
    ],
    # src/bft/BFTNode.java:896
    ("bftsmart-orderer", "node_discarded_envelope"): [
        "2026-11-24 10:00:00.000 [pool-1-thread-2] WARN  bft.BFTNode - Malformed envelope, discarding",
    ],
    # java.lang.ThreadGroup.uncaughtException
    ("bftsmart-orderer", "java_uncaught_exception"): [
        'Exception in thread "main" java.lang.IllegalStateException: replica 0 not in view',
        'Exception in thread "pool-1-thread-3" java.lang.OutOfMemoryError: Java heap space',
    ],
    ("bftsmart-orderer", "orderer_rejected_broadcast"): [
        f"{F12} [orderer/common/broadcast] Handle -> WARN 0f0 [channel: channel47] Rejecting broadcast of normal message "
        "from 10.0.0.3:51234 because of error: envelope too large",
    ],
    ("bftsmart-orderer", "go_panic"): ["panic: runtime error: invalid memory address or nil pointer dereference"],
}
# The committer-catchup driver's second peer logs what peer0 logs: its patterns (catchup_*, over its log alone)
# are peer0's, with a budget of their own (systems/fabric-3.1/validity.yaml).
POSITIVE.update({("fabric-3.1", f"catchup_{name}"): POSITIVE[("fabric-3.1", name)] for name in (
    "bad_creator_signature", "invalid_transaction", "endorsement_policy_failure", "mvcc_read_conflict")})

# Lines of healthy runs: no pattern of the system may match any of them.
HEALTHY = {
    "fabric-1.2": [
        # core/ledger/kvledger/kv_ledger.go:269
        f"{F12} [kvledger] CommitWithPvtData -> INFO 041 Channel [mychannel]: Committed block [5] with 100 transaction(s)",
        # statebasedval/state_based_validator.go:110 (DEBUG, a valid transaction)
        f"{F12} [statebasedval] ValidateAndPrepareBatch -> DEBU 0a2 Block [5] Transaction index [0] TxId [4f2a] "
        "marked as valid by state validator",
        # valimpl/helper.go:120 (DEBUG prints a header type)
        f"{F12} [valimpl] preprocessProtoBlock -> DEBU 0a3 txType=ENDORSER_TRANSACTION",
        # msgvalidation.go:420 with a nil error
        f"{F12} [protoutils] ValidateTransaction -> DEBU 0a4 ValidateTransactionEnvelope returns err %!s(<nil>)",
        # msgvalidation.go:180, 188
        f"{F12} [protoutils] checkSignatureFromCreator -> DEBU 0a5 creator is valid",
        # txvalidator/validator.go:353
        f"{F12} [committer/txvalidator] validateTx -> DEBU 0a6 Validating transaction vscc tx validate",
        # msp/mgmt/mgmt.go:103
        f"{F12} [msp] GetManagerForChain -> DEBU 0a7 Returning existing manager for channel 'mychannel'",
        # our blockwatch's per-transaction CSV row, should a tool echo one (docs/interfaces.md)
        "5,3,4f2a,MVCC_READ_CONFLICT",
        # patch 0003 peerbench stdout
        "All transactions successfully committed",
        "Commit: 20 blocks of 100 transactions in 1.2s: 1667 tx/s (validatorPoolSize 2)",
    ],
    "fastfabric": [
        # perf_deliverclient.go:119, experiment.go:186, :246
        "Storage server address: 127.0.0.1:10000",
        "All accounts setup correctly",
        "Last block no: 1000",
        "Validation completed",
        # fabric_extension grpcmocks/main/main.go:104
        "Ledger constructed",
    ],
    "validation-opt": [
        # core/ledger/util/couchdb/couchdb.go (INFO at start)
        f"{F12} [couchdb] CreateCouchInstance -> DEBU 0a1 Entering CreateCouchInstance()",
        f"{F12} [kvledger] CommitWithPvtData -> INFO 041 Channel [mychannel]: Committed block [5] with 50 transaction(s)",
    ],
    # no catalogue driver runs today's Fabric yet (its validity.yaml declares no pattern): lines its nodes print
    "fabric-3.1": [
        # a late copy of an envelope already ordered (our client sends each to the 4 SmartBFT orderers), from
        # CI's table1-today-bft on a loaded machine: every transfer was in a block
        "\x1b[33m2026-12-07 16:03:00.055 UTC 0114 WARN\x1b[0m [orderer.common.broadcast] \x1b[33;1mProcessMessage\x1b[0m "
        "-> [channel: mychannel] Rejecting broadcast of normal message from 127.0.0.1:43070 with SERVICE_UNAVAILABLE: "
        "rejected by Order: failed to submit request: request already processed",
        # core/ledger/kvledger/kv_ledger.go:724 (v3.1.5)
        f"{F31} [kvledger] commit -> [mychannel] Committed block [5] with 10 transaction(s) in 12ms "
        "(state_validation=3ms block_and_pvtdata_commit=5ms state_commit=2ms) commitHash=[0a1b]",
        # orderer/common/server/main.go:236 (v3.1.5)
        f"{F31} [orderer.common.server] Main -> Beginning to serve requests",
    ],
    "fujitsu-api": [
        # consensus/pbft/pbft-core.go:961
        f"{F06} [consensus/pbft] executeOne -> INFO 0a1 Replica 1 executing/committing request batch for "
        "view=0/seqNo=7 and digest 2f5b0a1c",
        # consensus/pbft/pbft-core.go:702 (DEBUG)
        f"{F06} [consensus/pbft] recvPrePrepare -> DEBU 0a2 Replica 1 received pre-prepare from replica 0 for view=0/seqNo=7",
        # consensus/helper/helper.go:137 (security off)
        f"{F06} [consensus/helper] Verify -> DEBU 0a3 Security is disabled",
        # core/rest/rest_api.go:867
        f"{F06} [rest] ProcessChaincode -> INFO 0a4 Successfully deployed chainCode: mycc",
        # workloads/chaincode_example02/client.py blocks sub-command, a healthy summary
        '{"blocks": 4, "transactions": 500, "height": 6, "peers": {}, "valid": true}',
    ],
    "bftsmart-orderer": [
        # BFT-SMaRt replicas connecting to peers not started yet (healthy at start)
        "java.net.ConnectException: Connection refused",
        "\tat java.base/sun.nio.ch.Net.connect0(Native Method)",
        # src/bft/BFTNode.java:745
        "2026-11-24 10:00:00.000 [main] INFO  bft.BFTNode - Orderer transaction envelope for system channel is valid, "
        "generating genesis with readset and writeset for channel channel47",
        f"{F12} [orderer/common/broadcast] Handle -> DEBU 0f1 [channel: channel47] Broadcast has successfully enqueued message of type ENDORSER_TRANSACTION from 10.0.0.3:51234",
    ],
    "fabric-x": [
        # loadgen/adapters/sidecar_receiver.go:121
        "2026-12-07 21:32:43.017 UTC [load-gen-adapters] mapToStatusBatch -> INFO Received block #97 with 100 TXs and 100 statuses [COMMITTED x 100]",
        # service/coordinator (a healthy start)
        "2026-12-07 21:32:31.557 UTC [coordinator] BlockProcessing -> INFO Start validate and commit stream",
        # PostgreSQL 15 at start
        "2026-12-07 21:32:20.609 UTC [9162] LOG:  database system is ready to accept connections",
        # loadgen at its limit (its normal end, files/run.sh)
        "Error: workload done: receiver done: context canceled",
        # Arma's assembler appending a block (node/assembler), and its metrics line
        "\x1b[34m2026-12-08 00:22:46.677 UTC 0036 INFO\x1b[0m [Assembler1] \x1b[34;1mfunc1\x1b[0m -> Appended block 2 of 3000 requests to ledger in 39.112013ms",
        "\x1b[34m2026-12-08 00:22:46.696 UTC 0037 INFO\x1b[0m [Assembler1] \x1b[34;1mtrackMetrics\x1b[0m -> ASSEMBLER_METRICS: total: party_id=1, TXs=3002, blocks=3",
    ],
}


def load(path: Path) -> dict:
    return yaml.safe_load(path.read_text())


DOCS = {p.parent.name: load(p) for p in FILES}
#: The system each extends (system.yaml), restated from the files: this test imports nothing it checks.
BASES = {p.parent.name: (yaml.safe_load(p.read_text()) or {}).get("extends") for p in SYSTEMS.glob("*/system.yaml")}


def patterns(system: str) -> dict[str, dict]:
    """The effective patterns of a system: its base's, then its own (same name replaces)."""
    doc = DOCS[system]
    out = dict(patterns(BASES[system])) if BASES.get(system) else {}
    out.update({p["name"]: p for p in doc["log_patterns"]})
    return out


def healthy(system: str) -> list[str]:
    return HEALTHY.get(system, []) + (healthy(BASES[system]) if BASES.get(system) else [])


def test_every_system_has_a_file():
    systems = {p.parent.name for p in SYSTEMS.glob("*/system.yaml")}
    assert systems <= set(DOCS), f"systems without validity.yaml: {sorted(systems - set(DOCS))}"


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.parent.name)
def test_format(path: Path):
    doc = load(path)
    assert doc.get("schema_version") == 1
    assert set(doc) <= {"schema_version", "log_patterns", "before_stop", "work", "evidence", "capacity_limits"}, set(doc)
    names = [p["name"] for p in doc["log_patterns"]]
    assert len(names) == len(set(names)), "duplicate pattern names"
    for p in doc["log_patterns"]:
        assert REQUIRED <= set(p) <= REQUIRED | OPTIONAL, (p.get("name"), set(p))
        assert re.fullmatch(r"[a-z][a-z0-9_]*", p["name"]), p["name"]
        assert isinstance(p["unexpected"], bool)
        if "fatal" in p:  # ends a running point (harness/watch.py): only a line the point fails for anyway
            assert p["fatal"] is True and p["unexpected"] and "planned_by" not in p, p["name"]
        assert isinstance(p["meaning"], str) and p["meaning"].strip()
        re.compile(p["regex"])
        if "planned_by" in p:
            assert p["planned_by"] in PARAMETERS, f"{p['name']}: planned_by {p['planned_by']} is not a declared parameter"
            assert p["unexpected"], f"{p['name']}: planned_by only makes sense on an unexpected pattern"
        for key in ("components", "components_except"):
            if key in p:
                assert isinstance(p[key], list) and all(isinstance(c, str) for c in p[key])
    if "work" in doc:
        w = doc["work"]
        # the margin is declared, never defaulted (docs/validity.md, "Work")
        assert {"verifies_per_tx", "why", "min_covered"} == set(w), set(w)
        assert isinstance(w["verifies_per_tx"], int) and w["verifies_per_tx"] > 0
        assert isinstance(w["min_covered"], (int, float)) and w["min_covered"] >= 1
    for m in doc.get("capacity_limits") or []:  # harness/capacity.py: a problem that says the cores are too few
        assert {"name", "regex", "meaning"} == set(m), set(m)
        re.compile(m["regex"])
    for m in doc.get("before_stop") or []:
        assert {"name", "regex", "meaning"} <= set(m) <= {"name", "regex", "meaning", "components"}, set(m)
        assert all(role_dir(c) is not None for c in m.get("components", [])), m
    for driver, builds in (doc.get("evidence") or {}).items():
        for build, decl in builds.items():
            for key in ("validators", "ledgers", "logs"):
                for c in decl.get(key, []):
                    c = validity.declared_log(c)[0] if key == "logs" else c
                    # a role, or one instance of it (<role>_<name>: Fabric-X's verifier of role fabric_x_committer)
                    assert role_dir(c) is not None or any(role_dir(c[:i]) is not None for i, ch in enumerate(c)
                                                          if ch == "_"), f"evidence.{driver}.{build}.{key}: no role {c}"


def system_drivers(system: str) -> set[tuple[str, str]]:
    """(driver, build) of every way a system runs: its upstream recipe's drivers and its reference build's."""
    folder = SYSTEMS / system
    out = set()
    if (folder / "upstream.yaml").is_file():
        out |= {(d, "upstream") for d in (load(folder / "upstream.yaml").get("drivers") or {})}
    reference = load(folder / "system.yaml").get("reference") or {}
    out |= {(d, "reference") for d in (reference.get("drivers") or {})}
    return out


@pytest.mark.parametrize("system", sorted(p.parent.name for p in SYSTEMS.glob("*/system.yaml")))
def test_every_driver_declares_its_evidence(system: str):
    """A point of a driver without a declaration fails (fail closed); the catalogue must declare them all."""
    evidence = validity.load_rules(system)["evidence"]
    missing = sorted(f"{d} ({b})" for d, b in system_drivers(system) if b not in (evidence.get(d) or {}))
    assert not missing, f"systems/{system}/validity.yaml declares no evidence for {', '.join(missing)}"


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.parent.name)
def test_each_pattern_matches_a_real_line(path: Path):
    system = path.parent.name
    for p in load(path)["log_patterns"]:
        samples = POSITIVE.get((system, p["name"]))
        assert samples, f"{system}/{p['name']}: no positive sample in this test"
        rx = re.compile(p["regex"])
        for line in samples:
            assert rx.search(line), f"{system}/{p['name']} misses {line!r}"


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.parent.name)
def test_no_pattern_matches_a_healthy_line(path: Path):
    system = path.parent.name
    lines = healthy(system)
    assert lines, f"{system}: no healthy sample"
    for name, p in patterns(system).items():
        rx = re.compile(p["regex"])
        for line in lines:
            assert not rx.search(line), f"{system}/{name} matches the healthy line {line!r}"


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.parent.name)
def test_each_line_written_before_the_stop_matches_a_healthy_line(path: Path):
    """A ``before_stop`` line is a healthy one (a commit): it must match a healthy line of its system, so that
    a log's recorded length at stop is held against lines a healthy run prints."""
    system = path.parent.name
    for m in load(path).get("before_stop") or []:
        assert any(re.search(m["regex"], line) for line in healthy(system)), f"{system}/{m['name']}"


def test_classes_stay_apart():
    """A policy failure is not also counted as another VSCC error, nor a creator failure as 'other'."""
    pats = patterns("fabric-1.2")
    policy_line = POSITIVE[("fabric-1.2", "endorsement_policy_failure")][1]
    assert not re.search(pats["vscc_error"]["regex"], policy_line)
    creator_line = POSITIVE[("fabric-1.2", "bad_creator_signature")][1]
    assert not re.search(pats["invalid_other"]["regex"], creator_line)


def test_fastfabric_storage_replay_is_not_a_failure():
    pats = patterns("fastfabric")
    assert pats["storage_replay_mvcc"]["unexpected"] is False
    assert pats["storage_replay_mvcc"]["components"] == ["fastfabric_storage"]
    assert "fastfabric_storage" in pats["mvcc_read_conflict"]["components_except"]
