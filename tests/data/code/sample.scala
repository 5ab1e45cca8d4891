package example

import scala.collection.mutable

/** A bank account. */
class Account(val owner: String) extends Base {
  private var balance: Long = 0

  /** Deposits money. */
  def deposit(
      amount: Long,
      note: String
  ): Unit = {
    balance += amount
  }

  def total: Long = balance
}

object Account {
  def apply(owner: String): Account = new Account(owner)
}

trait Greeter {
  def greet(name: String): String = s"hi {$name}"
}

case class Point(x: Int, y: Int)

def helper(x: Int): Int = x * 2
