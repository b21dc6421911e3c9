package io.github.sparkmultijoin.optimizer

import io.github.sparkmultijoin.model.{EventTimeBounds, InputColumns, JoinTree}
import io.github.sparkmultijoin.optimizer.FusionVerdict._

import org.apache.spark.sql.catalyst.expressions.{EqualTo, Expression}

/**
 * How a chain's key group is joined: a [[JoinTree]], or why one multi-join cannot run it.
 *
 * Why checks: inner joins always make a tree (all inputs inner), but outer joins only where the
 * multi-join gives the rows Spark's chain gives. Null-padded rows come out once the deciding
 * inputs' rows can join no row to come, so every input must be bounded in event time (a state
 * TTL cannot stand in for a bound: a row it drops may be one a null-padded row depends on, see
 * [[StateTtls]]). The inner joins' conditions may not read an outer input (its nulls would reach
 * them; the outer joins whose padded rows such a condition rejects are inner by now, see
 * [[ChainFlattening]]). And
 * every join must equate the key itself, as the multi-join looks every input's rows up by the
 * shared key: an outer input's ON clause to an input joined before it, the inner joins among the
 * inner inputs. FULL OUTER joins have rules of their own ([[fullOuterProblem]]).
 */
private[optimizer] object OuterTreeChecks {

  /**
   * How `group`, the chain's first key group, is joined, or why one multi-join cannot run it.
   * `groupSize` is the most inputs a multi-join takes.
   */
  def joinTree(chain: Chain, group: KeyGroup, groupSize: Int): Either[FusionVerdict, JoinTree] =
    if (!chain.hasOuterJoins) Right(JoinTree.inner(groupSize min group.inputs.length))
    else outerJoinTree(chain, group.keyClasses, groupSize)

  /** The [[JoinTree]] of a chain with outer joins, whose key group is every input. */
  private def outerJoinTree(
      chain: Chain,
      keyClasses: Seq[EquivalentKeys.KeyClass],
      groupSize: Int): Either[OuterChainKept, JoinTree] = {
    val inputs = chain.described
    val inner = chain.inputs.indices.filterNot(chain.outerOrder.contains)
    for {
      _ <- Either.cond(groupSize >= inputs.length, (), MaxTablesSplitsOuter(inputs, groupSize))
      _ <- fullOuterProblem(chain, inputs).toLeft(())
      _ <- paddedSideProblem(chain, inputs).toLeft(())
      _ <- innerKeyProblem(chain, inner, keyClasses, inputs).toLeft(())
      parents <- outerParents(chain, inner, keyClasses, inputs)
      tree = JoinTree(inputs.indices.map(parents.get), chain.outerOrder, chain.fullOuter)
      offsets = EventTimeBounds.evictionOffsets(chain.inputs.map(_.output), chain.conjuncts, tree)
      _ <- Either.cond(offsets.forall(_.isDefined), (), OuterInputsUnbounded(inputs))
    } yield tree
  }

  /**
   * Why a chain's FULL OUTER joins cannot run in one multi-join, if so. A FULL OUTER join pads
   * every input joined before it, so only FULL OUTER joins may apply above it: an inner join or
   * condition above it would read those nulls, and a LEFT OUTER join above it would need a tree
   * of its own. Its ON clause must be false wherever an input it reads is padded (as comparisons
   * are): a row of the joins before it then matches only with its inputs' own rows, which the
   * operator keeps while they can match.
   */
  private def fullOuterProblem(chain: Chain, inputs: Seq[Input]): Option[OuterChainKept] =
    if (chain.joinedAboveFullOuter) {
      Some(OuterAboveFullOuter(inputs))
    } else {
      chain.conjuncts.find { conjunct =>
        conjunct.outerInput.exists(chain.fullOuter) &&
        !EventTimeBounds.nullWhenAnyColumnIsNull(conjunct.expression)
      }.map { conjunct =>
        FullOuterHoldsOnNull(inputs, inputs(conjunct.outerInput.get), conjunct.expression.sql)
      }
    }

  /** A condition of the inner joins that reads an outer input, if any. */
  private def paddedSideProblem(chain: Chain, inputs: Seq[Input]): Option[OuterChainKept] = {
    val columns = new InputColumns(chain.inputs.map(_.output))
    chain.conjuncts.find { conjunct =>
      conjunct.outerInput.isEmpty &&
      columns.inputsOf(conjunct.expression).exists(chain.outerOrder.contains)
    }.map(conjunct => ConditionReadsPadded(inputs, conjunct.expression.sql))
  }

  /** Why the inner inputs do not share the key through the inner joins' conditions, if so. */
  private def innerKeyProblem(
      chain: Chain,
      inner: Seq[Int],
      keyClasses: Seq[EquivalentKeys.KeyClass],
      inputs: Seq[Input]): Option[OuterChainKept] = {
    lazy val innerClasses = EquivalentKeys.spanning(inner.map(chain.inputs),
      chain.conjuncts.filter(_.outerInput.isEmpty).map(_.expression))
    keyClasses.find { members =>
      val innerMembers = members.filter { case (input, _) => inner.contains(input) }.map(_._2)
      inner.length > 1 && !innerClasses.exists { innerClass =>
        innerMembers.forall(member => innerClass.exists(_._2.semanticEquals(member)))
      }
    }.map(members => InnerInputsMissKey(inputs, members.map(_._2.sql)))
  }

  /**
   * Per outer input, its parent: the input its ON clause reads that is joined last (the first
   * inner input where it reads none); or why an ON clause does not equate the key.
   */
  private def outerParents(
      chain: Chain,
      inner: Seq[Int],
      keyClasses: Seq[EquivalentKeys.KeyClass],
      inputs: Seq[Input]): Either[OuterChainKept, Map[Int, Int]] = {
    val columns = new InputColumns(chain.inputs.map(_.output))
    val joinOrder = inner ++ chain.outerOrder
    val (problems, parents) = chain.outerOrder.zipWithIndex.map { case (outer, place) =>
      val joinedBefore = joinOrder.take(inner.length + place)
      val onClause = chain.conjuncts.filter(_.outerInput.contains(outer)).map(_.expression)
      val reads = onClause.flatMap(columns.inputsOf).toSet - outer
      outerKeyProblem(outer, onClause, joinedBefore, keyClasses, inputs)
        .toLeft(outer -> joinedBefore.filter(reads).lastOption.getOrElse(inner.head))
    }.partitionMap(identity)
    problems.headOption.toLeft(parents.toMap)
  }

  /** Why `outer`'s ON clause does not equate its key to an input joined before it, if so. */
  private def outerKeyProblem(
      outer: Int,
      onClause: Seq[Expression],
      joinedBefore: Seq[Int],
      keyClasses: Seq[EquivalentKeys.KeyClass],
      inputs: Seq[Input]): Option[OuterChainKept] =
    keyClasses.find { members =>
      def memberOf(side: Expression, of: Int => Boolean) =
        members.exists { case (input, member) => of(input) && member.semanticEquals(side) }
      !onClause.exists {
        case EqualTo(left, right) =>
          (memberOf(left, _ == outer) && memberOf(right, joinedBefore.contains)) ||
          (memberOf(right, _ == outer) && memberOf(left, joinedBefore.contains))
        case _ => false
      }
    }.map(members => OuterInputMissesKey(inputs, inputs(outer), members.map(_._2.sql)))
}
