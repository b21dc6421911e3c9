package io.github.sparkmultijoin.planning

import io.github.sparkmultijoin.optimizer.FusionVerdict
import org.json4s.{JArray, JObject, JString}
import org.json4s.jackson.JsonMethods.{compact, render}

import org.apache.spark.sql.classic
import org.apache.spark.sql.multijoin.CatalystShim

/**
 * What the rule decides about a DataFrame, for callers outside the JVM: the Python advisor
 * calls [[FusionReport.json]] through py4j (`spark_multijoin.fusion_report`).
 *
 * The JSON it returns:
 * {{{
 * {
 *   "verdicts": [                     // in the rule's order
 *     {"code": "NO_SHARED_KEY",       // a code of spark-multijoin/fusion-verdicts.json
 *      "args": {...},                 // the verdict's arguments, below
 *      "message": "A chain of ...",   // its template filled: the words the log and EXPLAIN use
 *      "warning": false}              // whether the rule logs it as a WARNING
 *   ],
 *   "explain": "..."                  // the text EXPLAIN shows under
 *                                     // "== Extended Information (spark-multijoin) =="
 * }
 * }}}
 * An input, wherever an argument is one, is `{"name": "o" | null, "columns": ["k", ...]}`: the
 * name the query gave it (its alias, or its table's or view's), where the plan knows it. A list
 * of inputs is a JSON array of those. The arguments of each code are the placeholders of its
 * template, with numbers as numbers and lists as arrays, and some more; in particular:
 *  - `COLLAPSED`: `chainLength`, `multiJoins` (numbers); `groups`, one per multi-join group:
 *    `{"inputs": [input...], "keyColumns": n, "key": [[member SQL...] per key column],
 *    "operatorIds": [id...]}`; `joinedBySpark`, the inputs left to Spark's joins:
 *    `[{"input": input, "reason": "STATIC_INPUT" | "OFF_THE_KEY"}...]`; `byHint` (boolean).
 *  - `UNBOUNDED_INPUT`: `operatorId` (number), `input`, `eventTime` (its column, or null), and
 *    `why` (words).
 *  - `TTL_NOT_APPLIED_WITH_OUTER`: `operatorId`, `input`.
 *  - Kept chains (`NO_SHARED_KEY`, `TOO_FEW_STREAMING_INPUTS`, `OUTER_ABOVE_FULL_OUTER`, ...):
 *    `inputs` and `chainLength`, and per code: `conditions` (array of SQL), `keyType`, `key`
 *    (array of SQL), `outer` / `fullOuter` (an input), `condition` (SQL), `maxTables`.
 *  - `OUTER_JOIN_MADE_INNER`: `joinType`, `padded` (inputs), `runsAs` (the join type, SQL).
 *  - `MULTIPLE_EVENT_TIME_COLUMNS`: `columns` (array), `next` (an input).
 *  - `CONF_DISABLED`, `STORE_UNSUPPORTED` (`reason`), `UNSUPPORTED_JOIN_TYPE` (`joinType`),
 *    `NONDETERMINISTIC_CONDITION` (`condition`).
 */
object FusionReport {

  /**
   * The verdicts on `frame` and EXPLAIN's text on them, as JSON (see above). The plan is
   * optimized as `frame.explain()` optimizes it before the query starts; nothing runs.
   */
  def json(frame: classic.Dataset[_]): String = {
    val chains = FusionExplainGenerator.chains(CatalystShim.optimizedAsExplained(frame))
    compact(render(JObject(
      "verdicts" -> JArray(chains.flatten.map(FusionVerdict.json).toList),
      "explain" -> JString(FusionExplainGenerator.text(chains)))))
  }
}
