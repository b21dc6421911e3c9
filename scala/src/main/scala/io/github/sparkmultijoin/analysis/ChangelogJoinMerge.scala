package io.github.sparkmultijoin.analysis

import io.github.sparkmultijoin.analysis.ChangelogSides.{asInput, peel}
import io.github.sparkmultijoin.logical.ChangelogJoin

import org.apache.spark.sql.catalyst.expressions.{AliasHelper, And, AttributeSet, EqualTo, Expression, NamedExpression, PredicateHelper}
import org.apache.spark.sql.catalyst.plans.{FullOuter, Inner, JoinType, LeftOuter, RightOuter}
import org.apache.spark.sql.catalyst.plans.logical.{Join, LogicalPlan}

/**
 * A join of two changelog sides as one changelog join: the sides' inputs joined on their shared
 * key in one operator where the join's type lets the tree of `JoinTree` express it, and
 * otherwise a side read as one input, the changes of its own changelog join (stacked).
 */
private[analysis] object ChangelogJoinMerge extends PredicateHelper with AliasHelper {

  def apply(join: Join): ChangelogJoin = {
    val (left, right) = (join.left, join.right)
    Seq(left, right).filterNot(ChangelogSides.isChangelog).foreach(other =>
      throw refused(join,
        s"its side ${other.nodeName} is not a changelog. Declare every input of a join with a " +
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
    val r = group(right, pairs.map(_._2), on, join.joinType, isLeft = false)
      .filter(r =>
        l.forall { l =>
          keyOrder(r, pairs.map(_._2)).map(_.toSet) == keyOrder(l, pairs.map(_._1)).map(_.toSet) &&
          MergedTree.canJoin(l.tree, r.tree, join.joinType)
        })
    val key = l.map(keyOrder(_, pairs.map(_._1)).get)
      .orElse(r.map(keyOrder(_, pairs.map(_._2)).get)).getOrElse(pairs.indices).map(pairs)
    merged(l.getOrElse(asInput(left, key.map(_._1))), r.getOrElse(asInput(right, key.map(_._2))),
      join.joinType, on, key)
  }

  private def reads(expression: Expression, side: LogicalPlan): Boolean =
    expression.references.nonEmpty && expression.references.subsetOf(side.outputSet)

  private def refused(join: Join, why: String) = new ChangelogJoinException(
    s"The ${join.joinType.sql} JOIN of changelogs cannot run: $why.")

  /** A side's changelog join, where it can take the other side's inputs. */
  private def group(side: LogicalPlan, sideKeys: Seq[Expression], on: Expression,
      joinType: JoinType, isLeft: Boolean): Option[ChangelogJoin] = {
    val multi = side match {
      case cj: ChangelogJoin => Some(cj)
      case _ => peel(side).map(_.base).collect {
          case cj: ChangelogJoin if cj.output == side.output => cj
        }
    }
    multi.filter(g =>
      !g.raw && keyOrder(g, sideKeys).isDefined &&
        (g.filter.isEmpty || preserved(joinType, isLeft)) &&
        MergedTree.canTake(g.tree, joinType, isLeft, inputsRead(on, g)))
  }

  private def preserved(joinType: JoinType, isLeft: Boolean): Boolean = joinType match {
    case Inner => true
    case LeftOuter => isLeft
    case RightOuter => !isLeft
    case _ => false
  }

  /** Per component of `g`'s key, the position in `sideKeys` (over its output) that it is. */
  private def keyOrder(g: ChangelogJoin, sideKeys: Seq[Expression]): Option[Seq[Int]] = {
    val over = sideKeys.map(replaceAlias(_, getAliasMap(g.projectList.getOrElse(Nil))))
    g.keys.iterator.map(_.map(k => over.indexWhere(_.semanticEquals(k))))
      .find(order => order.forall(_ >= 0) && order.distinct.length == order.length)
  }

  private def inputsRead(on: Expression, g: ChangelogJoin): Set[Int] =
    g.children.indices.filter { i =>
      on.references.intersect(AttributeSet(g.currentColumns(i))).nonEmpty
    }.toSet

  private def merged(
      l: ChangelogJoin,
      r: ChangelogJoin,
      joinType: JoinType,
      condition: Expression,
      key: Seq[(Expression, Expression)]): ChangelogJoin = {
    val on = replaceAlias(condition,
      getAliasMap(l.projectList.getOrElse(Nil) ++
        r.projectList.getOrElse(Nil)))
    val n = l.children.length
    val tree = MergedTree(l.tree, r.tree, n, joinType,
      inputsRead(on, l) ++ inputsRead(on, r).map(_ + n))
    val inner = joinType == Inner
    val wasOuter = (l.tree.parents ++ r.tree.parents).map(_.isDefined)
    ChangelogJoin(l.children ++ r.children, l.widths ++ r.widths, l.rowIds ++ r.rowIds,
      l.formats ++ r.formats, alignedKeys(l, key.map(_._1)) ++ alignedKeys(r, key.map(_._2)),
      andAll(Seq(l.condition, r.condition, Some(on).filter(_ => inner)).flatten), tree,
      (l.onClauses ++ r.onClauses).zipWithIndex.map { case (clause, input) =>
        if (tree.isOuter(input) && !wasOuter(input)) on else clause
      },
      andAll(Seq(l.filter, r.filter).flatten), projection(l, r),
      (l.changeColumns ++ r.changeColumns).take(1)).withJoinedNullability.withChangeType
  }

  /** `g`'s keys, each in the order of `sideKeys`, the key of the merged join. */
  private def alignedKeys(g: ChangelogJoin, sideKeys: Seq[Expression]): Seq[Seq[Expression]] = {
    val order = keyOrder(g, sideKeys).get
    g.keys.map(k => sideKeys.indices.map(p => k(order.indexOf(p))))
  }

  private def andAll(parts: Seq[Expression]): Option[Expression] = parts.reduceOption(And)

  private def projection(l: ChangelogJoin, r: ChangelogJoin): Option[Seq[NamedExpression]] =
    if (l.projectList.isEmpty && r.projectList.isEmpty) None
    else Some(l.projectList.getOrElse(l.joinedOutput) ++ r.projectList.getOrElse(r.joinedOutput))
}
