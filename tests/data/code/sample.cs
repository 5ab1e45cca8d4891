using System;

namespace Shop.Billing
{
    /// <summary>An invoice.</summary>
    [Serializable]
    public class Invoice : IEntity
    {
        public decimal Total { get; set; }

        /// <summary>Adds a line.</summary>
        public void AddLine(
            string sku,
            decimal price)
        {
            var s = "}";
            Total += price;
        }

        public Invoice() { }

        public interface IVisitor
        {
            void Visit(Invoice invoice);
        }
    }

    public struct Money
    {
        public decimal Amount;
    }

    public enum Status { Open, Paid }

    public record Customer(string Name);
}
