'use strict';

// Caliper 0.6 workload module: the money transfers of our load generator (cmd/loadgen, workloads/money-transfer)
// sent through Caliper's Fabric connector, for systems/fabric-3.1's end-to-end driver with a Caliper round
// (parameter caliper_transactions; roles/fabric3_caliper). The same chaincode function, arguments and amount:
//
//   transfer(from, to, amount[, padding])   accounts acct%08d, amount 1, padding of payloadBytes 'a'..'z'
//
// Transaction k of worker w (of W) moves money from account 2p to 2p+1, p = w + k*W: pairs our load
// generator's setup created (2 accounts per transfer) and no two of this round share, so every transfer can be
// valid (no MVCC conflict by construction, as our load generator's conflict-free plan). Our load generator's own
// transfers used the same pairs before this round; the chaincode only needs the accounts to exist with money.
// A round longer than the setup's pairs (caliper_transactions > transactions) names accounts nobody created
// from pair `accounts / 2` on: the chaincode refuses those at endorsement ("account ... does not exist"), so
// they never reach the orderer or the ledger, and Caliper counts each as a failure (labs/07-caliper-vs-ledger.md).
//
// No require of @hyperledger/caliper-core: Caliper calls the four methods below on the object
// createWorkloadModule returns (caliper-core lib/worker/workload/workloadModuleInterface.js), so the module
// runs from this repository, outside Caliper's npm workspace.

function accountName(i) {
    return 'acct' + String(i).padStart(8, '0');
}

function padding(n) {
    let s = '';
    for (let i = 0; i < n; i++) {
        s += String.fromCharCode(97 + (i % 26));
    }
    return s;
}

class MoneyTransfer {
    constructor() {
        this.sent = 0;
    }

    async initializeWorkloadModule(workerIndex, totalWorkers, roundIndex, roundArguments, sutAdapter, sutContext) {
        this.workerIndex = workerIndex;
        this.totalWorkers = totalWorkers;
        this.args = roundArguments;
        this.sutAdapter = sutAdapter;
        this.padding = padding(Number(roundArguments.payloadBytes || 0));
        this.sent = 0;
    }

    async submitTransaction() {
        const pair = this.workerIndex + this.sent * this.totalWorkers;
        this.sent += 1;
        const contractArguments = [accountName(2 * pair), accountName(2 * pair + 1), String(this.args.amount || 1)];
        if (this.padding.length > 0) {
            contractArguments.push(this.padding);
        }
        return this.sutAdapter.sendRequests({
            contractId: this.args.contractId,
            channel: this.args.channel,
            contractFunction: 'transfer',
            contractArguments,
            invokerIdentity: this.args.invokerIdentity,
            readOnly: false,
        });
    }

    async cleanupWorkloadModule() {}
}

function createWorkloadModule() {
    return new MoneyTransfer();
}

module.exports.createWorkloadModule = createWorkloadModule;
