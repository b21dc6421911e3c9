package io.github.sparkmultijoin.model

import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeSet, Expression, PredicateHelper}

/**
 * A conjunct of a multi-join's conditions. `outerInput` is the outer input whose ON clause it
 * belongs to: it decides whether that input matches, and is not checked where that input is
 * null-padded. Conjuncts of the inner joins (None) hold in every output row.
 */
case class Conjunct(expression: Expression, outerInput: Option[Int])

object Conjunct extends PredicateHelper {

  /** The conjuncts of the inner joins' `condition` and of each outer input's ON clause. */
  def all(condition: Option[Expression], onClauses: Seq[Option[Expression]]): Seq[Conjunct] =
    split(condition, None) ++ onClauses.zipWithIndex.flatMap { case (on, input) =>
      split(on, Some(input))
    }

  def split(condition: Option[Expression], outerInput: Option[Int]): Seq[Conjunct] =
    condition.toSeq.flatMap(splitConjunctivePredicates).map(Conjunct(_, outerInput))
}

/**
 * The columns of a multi-join's inputs, to tell which inputs an expression reads. By expression
 * id: an input's output may differ from a condition's attributes in nullability (a Filter below
 * makes them non-nullable).
 */
class InputColumns(inputs: Seq[Seq[Attribute]]) {

  private val columns = inputs.map(AttributeSet(_))

  def inputsOf(expression: Expression): Set[Int] =
    inputs.indices.filter(input => expression.references.intersect(columns(input)).nonEmpty)
      .toSet
}
