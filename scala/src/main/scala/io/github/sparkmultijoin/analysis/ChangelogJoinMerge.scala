package io.github.sparkmultijoin.analysis

import io.github.sparkmultijoin.analysis.ChangelogSides.{asInput, peel}
import io.github.sparkmultijoin.logical.ChangelogJoin
import io.github.sparkmultijoin.optimizer.FusionVerdict

import org.apache.spark.sql.catalyst.expressions.{AliasHelper, And, AttributeSet, EqualTo, Expression, NamedExpression, PredicateHelper}
import org.apache.spark.sql.catalyst.plans.{FullOuter, Inner, JoinType, LeftOuter, RightOuter}
import org.apache.spark.sql.catalyst.plans.logical.{Join, LogicalPlan, Project}

/**
 * A join of two changelog sides as one changelog join: the sides' inputs joined on their shared
 * key in one operator where the join's type lets the tree of `JoinTree` express it, and
 * otherwise a side read as one input, the changes of its own changelog join (stacked). The
 * selects on a side that is a changelog join stay above the merged join.
 */
private[analysis] object ChangelogJoinMerge extends PredicateHelper with AliasHelper {

  /** A side's changelog join, and the side's columns over its output. */
  private case class Group(join: ChangelogJoin, columns: Seq[NamedExpression])

  def apply(join: Join): LogicalPlan = {
    val (left, right) = (join.left, join.right)
    Seq(left, right).filterNot(ChangelogSides.isChangelog).foreach(other =>
      throw refused(join,
        s"its side ${ChangelogSides.nameOf(other).shown} is not a changelog. Declare every " +
          "input of a join with a " +
          "changelog input (spark_multijoin.changelog; an append-only stream with insert_only)"))
    if (!Seq(Inner, LeftOuter, RightOuter, FullOuter).contains(join.joinType)) throw refused(
      join, "a changelog join is INNER, LEFT, RIGHT or FULL OUTER")
    val pairs = join.condition.toSeq.flatMap(splitConjunctivePredicates).collect {
      case EqualTo(l, r) if reads(l, left) && reads(r, right) => (l, r)
      case EqualTo(r, l) if reads(l, left) && reads(r, right) => (l, r)
    }
    if (pairs.isEmpty) throw refused(join,
      "its ON clause has no equality of the two sides, " +
        "which a changelog join is keyed by")
    val on = join.condition.get
    val l = group(left, pairs.map(_._1), on, join.joinType, isLeft = true)
    val r = group(right, pairs.map(_._2), on, join.joinType, isLeft = false).filter(r =>
      l.forall(l =>
        keyOrder(r, pairs.map(_._2)).map(_.toSet) ==
          keyOrder(l, pairs.map(_._1)).map(_.toSet) &&
          MergedTree.canJoin(l.join.tree, r.join.tree, join.joinType)))
    val key = l.map(keyOrder(_, pairs.map(_._1)).get)
      .orElse(r.map(keyOrder(_, pairs.map(_._2)).get)).getOrElse(pairs.indices).map(pairs)
    val (lg, rg) = (l.getOrElse(input(left, key.map(_._1))),
      r.getOrElse(input(right, key.map(_._2))))
    val merged = this.merged(lg, rg, join.joinType, on, key)
    merged.setTagValue(FusionVerdict.Tag,
      ChangelogVerdicts(merged,
        Seq((left, lg, l.isEmpty, pairs.map(_._1)), (right, rg, r.isEmpty, pairs.map(_._2))).map {
          case (side, g, stacked, keys) =>
            (side, g.join, stacked, stacked && group(side, keys, on, Inner, isLeft = true).isEmpty)
        }, join.joinType))
    val columns = (lg.columns ++ rg.columns).map(ChangelogJoin.nullabilityOf(merged.output))
    if (columns == merged.joinedOutput) merged else Project(columns, merged)
  }

  private def reads(expression: Expression, side: LogicalPlan): Boolean =
    expression.references.nonEmpty && expression.references.subsetOf(side.outputSet)

  private def refused(join: Join, why: String) = new ChangelogJoinException(
    s"The ${join.joinType.sql} JOIN of changelogs cannot run: $why.")

  private def input(side: LogicalPlan, key: Seq[Expression]): Group = {
    val cj = asInput(side, key)
    Group(cj, cj.joinedOutput)
  }

  /** A side's changelog join, where it can take the other side's inputs. */
  private def group(side: LogicalPlan, sideKeys: Seq[Expression], on: Expression,
      joinType: JoinType, isLeft: Boolean): Option[Group] =
    peel(side).collect {
      case ChangelogSides.Side(cj: ChangelogJoin, columns, None) if !cj.raw =>
        Group(cj, columns.filterNot(c => cj.changeColumns.exists(_.exprId == c.exprId)))
    }.filter { g =>
      keyOrder(g, sideKeys).isDefined && (g.join.filter.isEmpty || preserved(joinType, isLeft)) &&
      MergedTree.canTake(g.join.tree, joinType, isLeft, inputsRead(over(on, g), g.join))
    }

  private def preserved(joinType: JoinType, isLeft: Boolean): Boolean = joinType match {
    case Inner => true
    case LeftOuter => isLeft
    case RightOuter => !isLeft
    case _ => false
  }

  /** `e`, over a side's columns, over its changelog join's. */
  private def over(e: Expression, g: Group): Expression = replaceAlias(e, getAliasMap(g.columns))

  /** Per component of `g`'s key, the position in `sideKeys` (over the side) that it is. */
  private def keyOrder(g: Group, sideKeys: Seq[Expression]): Option[Seq[Int]] = {
    val keys = sideKeys.map(over(_, g))
    g.join.keys.iterator.map(_.map(k => keys.indexWhere(_.semanticEquals(k))))
      .find(order => order.forall(_ >= 0) && order.distinct.length == order.length)
  }

  private def inputsRead(on: Expression, g: ChangelogJoin): Set[Int] =
    g.children.indices.filter { i =>
      on.references.intersect(AttributeSet(g.currentColumns(i))).nonEmpty
    }.toSet

  private def merged(
      lg: Group,
      rg: Group,
      joinType: JoinType,
      condition: Expression,
      key: Seq[(Expression, Expression)]): ChangelogJoin = {
    val (l, r) = (lg.join, rg.join)
    val on = over(over(condition, lg), rg)
    val n = l.children.length
    val tree = MergedTree(l.tree, r.tree, n, joinType,
      inputsRead(on, l) ++ inputsRead(on, r).map(_ + n))
    val wasOuter = (l.tree.parents ++ r.tree.parents).map(_.isDefined)
    val inner = Some(on).filter(_ => joinType == Inner)
    ChangelogJoin(l.children ++ r.children, l.widths ++ r.widths, l.rowIds ++ r.rowIds,
      l.formats ++ r.formats, l.names ++ r.names,
      alignedKeys(lg, key.map(_._1)) ++ alignedKeys(rg, key.map(_._2)),
      Seq(l.condition, r.condition, inner).flatten.reduceOption(And), tree,
      (l.onClauses ++ r.onClauses).zipWithIndex.map { case (clause, input) =>
        if (tree.isOuter(input) && !wasOuter(input)) on else clause
      },
      Seq(l.filter, r.filter).flatten.reduceOption(And),
      (l.changeColumns ++ r.changeColumns).take(1)).withJoinedNullability.withChangeType
  }

  /** `g`'s keys, each in the order of `sideKeys`, the key of the merged join. */
  private def alignedKeys(g: Group, sideKeys: Seq[Expression]): Seq[Seq[Expression]] = {
    val order = keyOrder(g, sideKeys).get
    g.join.keys.map(k => sideKeys.indices.map(p => k(order.indexOf(p))))
  }
}
