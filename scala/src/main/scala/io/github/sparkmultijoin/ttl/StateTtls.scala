package io.github.sparkmultijoin.ttl

import io.github.sparkmultijoin.logical.MultiJoin
import io.github.sparkmultijoin.optimizer.{FusionVerdict, InputNames}
import io.github.sparkmultijoin.optimizer.FusionVerdict.TtlNotAppliedWithOuter

import org.apache.spark.sql.catalyst.expressions.ExprId
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan

/**
 * The state TTL each input of a multi-join takes: the shortest of the STATE_TTL hints that name
 * a relation under it, else the session's `multi-join.state-ttl`; none in a multi-join with
 * outer joins.
 *
 * Why none with outer joins: a null-padded row comes out once its deciding row is final, and is
 * decided by the rows stored then of every input that row can be joined with. Every input of such
 * a multi-join is bounded by time (else the chain keeps Spark's joins, [[OuterTreeChecks]]), and
 * its bounds keep each row exactly until no null-padded row can depend on it. A TTL would drop a
 * row sooner, in processing time, which says nothing of when the rows it joined are decided: a
 * deciding row already emitted matched with it would come out null-padded as well, and an
 * emitted row cannot be retracted. So a session TTL simply does not apply there (it never takes
 * fusion away), and a hint naming such an input is warned of. With inner joins only, nothing is
 * decided later, and every input, bounded by time or not, takes its TTL.
 *
 * @param session the session's TTL (ms), if set
 * @param hinted  per relation a STATE_TTL hint names, the ids of its columns, with its TTL (ms)
 */
private[sparkmultijoin] case class StateTtls(session: Option[Long],
    hinted: Seq[(Set[ExprId], Long)]) {

  /**
   * `plan` with each of its multi-joins' inputs' TTLs set, and warnings of hints that do not
   * apply, naming the inputs by `names`.
   */
  def applied(plan: LogicalPlan, names: InputNames): (LogicalPlan, Seq[FusionVerdict]) = {
    val notApplied = plan.collect {
      case multiJoin: MultiJoin if multiJoin.tree.outerInputs.nonEmpty =>
        multiJoin.children.filter(hintFor(_).isDefined)
          .map(input => TtlNotAppliedWithOuter(multiJoin.operatorId, names.of(input)))
    }.flatten
    val withTtls = plan.transform {
      case multiJoin: MultiJoin if multiJoin.tree.outerInputs.isEmpty =>
        multiJoin.copy(stateTtlsMs = multiJoin.children.map(hintFor(_).orElse(session)))
    }
    (withTtls, notApplied)
  }

  /** The shortest TTL of the hints that name a relation under `input`, if one does. */
  private def hintFor(input: LogicalPlan): Option[Long] = hinted.collect {
    case (ids, ttl) if input.collectLeaves().exists(_.output.exists(c => ids(c.exprId))) => ttl
  }.minOption
}
